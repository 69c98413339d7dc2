package manifests

import (
	"fmt"

	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/version"
)

// MinimumKubernetesVersion is the oldest Kubernetes cnat runs on: the CRD's
// selectableFields are GA there (README, Requirements). Apply refuses an
// older server before it changes anything.
const MinimumKubernetesVersion = "1.32"

// minimumVersion is MinimumKubernetesVersion, parsed.
var minimumVersion = utilversion.MustParseGeneric(MinimumKubernetesVersion)

// checkServerVersion refuses a server older than MinimumKubernetesVersion, or
// whose version cannot be read, naming both.
func checkServerVersion(info *version.Info) error {
	v, err := utilversion.ParseGeneric(info.GitVersion)
	if err != nil {
		return fmt.Errorf("the API server reports the version %q, which is not a Kubernetes version; cnat needs Kubernetes v%s or later", info.GitVersion, MinimumKubernetesVersion)
	}
	if !v.AtLeast(minimumVersion) {
		return fmt.Errorf("the cluster runs Kubernetes %s; cnat needs Kubernetes v%s or later (the At CRD's selectableFields are GA since v1.32: an older API server drops them)", info.GitVersion, MinimumKubernetesVersion)
	}
	return nil
}
