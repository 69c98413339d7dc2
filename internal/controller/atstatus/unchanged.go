package atstatus

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// Unchanged reports whether applying desired would change nothing, given
// owned: what the same field manager owns on the live object, as returned by
// the generated Extract functions (which read the managed fields). It
// decides as the API server does, on structured-merge-diff typed values: an
// apply is a no-op when the manager would own the same fields with the same
// values afterwards. Sending it anyway would be a write for nothing.
func Unchanged(tc managedfields.TypeConverter, desired, owned runtime.ApplyConfiguration) (bool, error) {
	want, err := typedValue(tc, desired)
	if err != nil {
		return false, fmt.Errorf("reading the desired apply configuration: %w", err)
	}
	have, err := typedValue(tc, owned)
	if err != nil {
		return false, fmt.Errorf("reading the owned fields: %w", err)
	}
	comparison, err := have.Compare(want)
	if err != nil {
		return false, fmt.Errorf("comparing apply configurations: %w", err)
	}
	return comparison.IsSame(), nil
}

func typedValue(tc managedfields.TypeConverter, ac runtime.ApplyConfiguration) (*typed.TypedValue, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ac)
	if err != nil {
		return nil, err
	}
	return tc.ObjectToTyped(&unstructured.Unstructured{Object: content}, typed.AllowDuplicates)
}
