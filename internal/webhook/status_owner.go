package webhook

import (
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/apply"
)

// validateStatusOwner refuses a write of the At itself that changes or drops
// the managedFields entry of the controller's status field manager: the
// record by which its server-side applies of the status remove what they no
// longer set. Only writes of the status subresource may change it; a write
// that resets managedFields would leave every later status apply refused.
func validateStatusOwner(old, at *cnatv1beta1.At) *field.Error {
	before, after := statusOwner(old), statusOwner(at)
	if apiequality.Semantic.DeepEqual(before, after) {
		return nil
	}
	return field.Forbidden(field.NewPath("metadata", "managedFields"),
		"the entry of field manager "+apply.StatusFieldManager+" records which status fields the cnat controller owns: "+
			"only its writes of the status subresource may change it; leave managedFields out of the request, or send them as they are")
}

// statusOwner is the managedFields entries of the controller's status field
// manager.
func statusOwner(at *cnatv1beta1.At) []metav1.ManagedFieldsEntry {
	var out []metav1.ManagedFieldsEntry
	for _, m := range at.ManagedFields {
		if m.Manager == apply.StatusFieldManager && m.Subresource == "status" {
			out = append(out, m)
		}
	}
	return out
}
