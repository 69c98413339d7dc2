package atcache

import (
	"bytes"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/controller/atstatus"
)

// Trim drops from an At the store keeps whole what the controller never
// reads: kubectl's last-applied annotation and, of the managed fields, all
// but who owns the status (which the status write compares its apply with).
func Trim(at *cnatv1beta1.At) *cnatv1beta1.At {
	var kept []metav1.ManagedFieldsEntry
	for _, entry := range at.ManagedFields {
		if entry.Manager == atstatus.StatusFieldManager {
			kept = append(kept, entry)
			continue
		}
		if status, ok := statusFields(entry.FieldsV1); ok {
			entry.FieldsV1 = status
			kept = append(kept, entry)
		}
	}
	at.ManagedFields = kept
	delete(at.Annotations, corev1.LastAppliedConfigAnnotation)
	return at
}

// statusFields is the part of fields that is under status, if any. Most
// entries own none: the creator's, the admission webhook's.
func statusFields(fields *metav1.FieldsV1) (*metav1.FieldsV1, bool) {
	const key = `"f:status"`
	if fields == nil || !bytes.Contains(fields.GetRawBytes(), []byte(key)) {
		return nil, false
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(fields.GetRawBytes(), &top); err != nil || top["f:status"] == nil {
		return nil, false
	}
	return metav1.NewFieldsV1(`{"f:status":` + string(top["f:status"]) + `}`), true
}
