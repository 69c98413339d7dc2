package manifests

import (
	"context"
	"errors"
	"regexp"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fluxcd/pkg/ssa"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// conflictManager reads the manager out of the message of a conflict cause:
// `conflict with "kustomize-controller" using v1`.
var conflictManager = regexp.MustCompile(`^conflict with "([^"]*)"`)

// conflicts returns the fields of o another field manager owns with another
// value, by a dry run without forced ownership (ssa always forces), made only
// when live has a foreign manager; guarded fields are not conflicts.
func (a *Applier) conflicts(ctx context.Context, o, live *unstructured.Unstructured) []string {
	if live == nil || !hasForeignManager(live) {
		return nil
	}
	err := a.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.FieldOwner(cnatv1beta1.CLIFieldManager), client.DryRunAll)
	var status apierrors.APIStatus
	if !apierrors.IsConflict(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return nil // anything else is ssa's dry-run's to report
	}
	var fields []string
	for _, c := range status.Status().Details.Causes {
		m := conflictManager.FindStringSubmatch(c.Message)
		if c.Type != metav1.CauseTypeFieldManagerConflict || m == nil || isTakenOver(m[1]) || guardedPath(o, c.Field) {
			continue
		}
		fields = append(fields, c.Field+` (owned by "`+m[1]+`")`)
	}
	return fields
}

// hasForeignManager says whether a manager other than cnatctl and kubectl's
// owns fields of live itself (not of a subresource such as status).
func hasForeignManager(live *unstructured.Unstructured) bool {
	for _, mf := range live.GetManagedFields() {
		if mf.Subresource == "" && mf.Manager != cnatv1beta1.CLIFieldManager && !isTakenOver(mf.Manager) {
			return true
		}
	}
	return false
}

// isTakenOver says whether manager is kubectl's (takeover).
func isTakenOver(manager string) bool {
	return slices.ContainsFunc(takeover.FieldManagers, func(m ssa.FieldManager) bool { return m.Name == manager })
}
