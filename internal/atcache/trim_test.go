package atcache

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/controller/atstatus"
)

// TestTrimmedAtKeepsWhoOwnsTheStatus: the store keeps, of an At's managed
// fields, the status writer's entries whole and, of every other entry, only
// what it owns under status (what an apply of the status cannot remove);
// entries that own no status go.
func TestTrimmedAtKeepsWhoOwnsTheStatus(t *testing.T) {
	g := NewWithT(t)
	entry := func(manager string, op metav1.ManagedFieldsOperationType, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}
	}
	at := &cnatv1beta1.At{ObjectMeta: metav1.ObjectMeta{
		Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: "{}", "team": "a"},
		ManagedFields: []metav1.ManagedFieldsEntry{
			entry("kubectl", metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:command":{}}}`),
			entry("before-first-apply", metav1.ManagedFieldsOperationUpdate, `{"f:metadata":{"f:labels":{}},"f:spec":{"f:command":{}},"f:status":{"f:exitCode":{}}}`),
			entry(atstatus.StatusFieldManager, metav1.ManagedFieldsOperationApply, `{"f:status":{"f:phase":{}}}`),
			entry("someone", metav1.ManagedFieldsOperationUpdate, `{"f:metadata":{"f:annotations":{"f:note":{}}},"f:spec":{"f:schedule":{}}}`),
			entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, `{"f:status":{"f:phase":{},"f:reason":{}}}`),
		},
	}}
	Trim(at)
	g.Expect(at.ManagedFields).To(Equal([]metav1.ManagedFieldsEntry{
		entry("before-first-apply", metav1.ManagedFieldsOperationUpdate, `{"f:status":{"f:exitCode":{}}}`),
		entry(atstatus.StatusFieldManager, metav1.ManagedFieldsOperationApply, `{"f:status":{"f:phase":{}}}`),
		entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, `{"f:status":{"f:phase":{},"f:reason":{}}}`),
	}))
	g.Expect(at.Annotations).To(Equal(map[string]string{"team": "a"}))
}
