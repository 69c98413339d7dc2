package manifests

import (
	"fmt"

	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/version"
)

// MinimumKubernetesVersion is the oldest Kubernetes cnat runs on. It is the
// newest of what its manifests and its controller rely on:
//
//   - 1.32: the CRD's selectableFields (status.phase, status.scheduledTime),
//     GA in 1.32 (KEP-4358, CustomResourceFieldSelectors: alpha 1.30, beta
//     1.31). An older API server drops them from the CRD without an error,
//     so `kubectl get ats --field-selector status.phase=Failed` fails and
//     the controller reads a burst of Ats due together one GET at a time.
//   - 1.30: the Pod claims policy, admissionregistration.k8s.io/v1
//     ValidatingAdmissionPolicy (GA in 1.30).
//   - older still: the CRD's CEL rules with reason and fieldPath (1.28),
//     server-side apply.
//
// Apply refuses an older server before it changes anything.
const MinimumKubernetesVersion = "1.32"

// minimumVersion is MinimumKubernetesVersion, parsed.
var minimumVersion = utilversion.MustParseGeneric(MinimumKubernetesVersion)

// checkServerVersion returns an error naming the server's version and the
// minimum if the API server that answered info is older than
// MinimumKubernetesVersion, or says a version that cannot be read.
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
