package atstatus

import (
	"bytes"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	cnatac "github.com/programming-kubernetes/cnat/api/applyconfiguration/api/v1beta1"
	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// leftBehind reports whether applying desired would leave in at's status a
// field desired does not set. An apply removes an omitted field only when
// StatusFieldManager's apply owned it alone; a user who may patch Ats can
// reset the managed fields, after which the API server gives every live
// field to "before-first-apply", and an ordinary v1alpha1 update takes
// status fields too. Such a status can only be written whole.
func leftBehind(tc managedfields.TypeConverter, at *cnatv1beta1.At, desired *cnatac.AtApplyConfiguration) (bool, error) {
	live, err := statusApplyConfiguration(at, &at.Status)
	if err != nil {
		return false, err
	}
	liveSet, err := fieldSet(tc, live)
	if err != nil {
		return false, err
	}
	desiredSet, err := fieldSet(tc, desired)
	if err != nil {
		return false, err
	}
	// An empty status is the one field path of an At not yet written.
	omitted := liveSet.Difference(desiredSet).Difference(fieldpath.NewSet(fieldpath.MakePathOrDie("status")))
	if omitted.Empty() {
		return false, nil
	}
	mine, others := &fieldpath.Set{}, &fieldpath.Set{}
	for _, entry := range at.ManagedFields {
		if entry.FieldsV1 == nil || !bytes.Contains(entry.FieldsV1.GetRawBytes(), []byte(`"f:status"`)) {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(bytes.NewReader(entry.FieldsV1.GetRawBytes())); err != nil {
			return false, fmt.Errorf("reading the fields %s owns: %w", entry.Manager, err)
		}
		// The API server tells managers apart by name, operation and
		// subresource: an entry of the same name on the main resource
		// (written there by a user who may patch Ats) is another manager.
		if entry.Manager == StatusFieldManager && entry.Operation == metav1.ManagedFieldsOperationApply && entry.Subresource == "status" {
			mine = mine.Union(set)
		} else {
			others = others.Union(set)
		}
	}
	// What the apply removes: what it owned alone.
	return !omitted.Difference(mine.Difference(others)).Empty(), nil
}

func fieldSet(tc managedfields.TypeConverter, ac *cnatac.AtApplyConfiguration) (*fieldpath.Set, error) {
	value, err := typedValue(tc, ac)
	if err != nil {
		return nil, fmt.Errorf("reading a status: %w", err)
	}
	return value.ToFieldSet()
}
