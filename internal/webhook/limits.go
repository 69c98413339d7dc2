package webhook

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	cnatv1alpha1 "github.com/programming-kubernetes/cnat/api/v1alpha1"
	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// MaxCommandBytes is the longest spec.command the kernel passes to a
// program: one argument of execve may be at most MAX_ARG_STRLEN (131072)
// bytes including its terminating NUL. The CRD's schema says the same.
const MaxCommandBytes = 131071

// validateLimits refuses what would be stored but could never run, or would
// not do what its writer meant: a command with a NUL or longer than the
// kernel takes, a NUL anywhere in the template (no container runtime passes
// one on), a service account name the API server can never accept, and the
// annotation in which the v1alpha1 form of an At once carried its template.
func validateLimits(at *cnatv1beta1.At) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if _, ok := at.Annotations[cnatv1alpha1.FormerTemplateAnnotation]; ok {
		// A manifest written for the former v1alpha1 form would silently
		// run without its template.
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "annotations").Key(cnatv1alpha1.FormerTemplateAnnotation),
			"no longer carries the template: set spec.template (in v1alpha1 as in v1beta1) and remove this annotation"))
	}
	if strings.ContainsRune(at.Spec.Command, 0) {
		errs = append(errs, field.Invalid(spec.Child("command"), field.OmitValueType{}, "must not contain a NUL character: no program can be given one in an argument"))
	}
	if n := len(at.Spec.Command); n > MaxCommandBytes {
		errs = append(errs, tooLong(spec.Child("command"), fmt.Sprintf("must be at most %d bytes in UTF-8 (the kernel's limit for one argument, 128 KiB with its terminating NUL), not %d", MaxCommandBytes, n)))
	}
	t := at.Spec.Template
	if t == nil {
		return errs
	}
	template := spec.Child("template")
	if raw, err := json.Marshal(t); err == nil {
		var tree any
		if err := json.Unmarshal(raw, &tree); err == nil {
			errs = append(errs, findNUL(tree, template)...)
		}
	}
	podSpec := template.Child("spec")
	// The Pod's admission plugins look these objects up before the Pod's
	// own validation runs, and answer an impossible name with Forbidden
	// (which the dry run only warns about) or an internal error.
	for _, ref := range []struct{ name, kind, value string }{
		{"serviceAccountName", "ServiceAccount", t.Spec.ServiceAccountName},
		{"serviceAccount", "ServiceAccount", t.Spec.DeprecatedServiceAccount},
		{"runtimeClassName", "RuntimeClass", ptr.Deref(t.Spec.RuntimeClassName, "")},
		{"priorityClassName", "PriorityClass", t.Spec.PriorityClassName},
	} {
		if ref.value == "" {
			continue
		}
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(ref.value, false) {
			errs = append(errs, field.Invalid(podSpec.Child(ref.name), ref.value, "must be the name of a "+ref.kind+": "+msg))
		}
	}
	return errs
}

// findNUL names every string in a JSON tree that holds a NUL character.
func findNUL(v any, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch v := v.(type) {
	case string:
		if strings.ContainsRune(v, 0) {
			errs = append(errs, field.Invalid(path, field.OmitValueType{}, "must not contain a NUL character"))
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if strings.ContainsRune(k, 0) {
				errs = append(errs, field.Invalid(path, field.OmitValueType{}, "keys must not contain a NUL character"))
			}
			errs = append(errs, findNUL(v[k], path.Child(k))...)
		}
	case []any:
		for i, child := range v {
			errs = append(errs, findNUL(child, path.Index(i))...)
		}
	}
	return errs
}

// tooLong is a TooLong error with a detail that says what is accepted.
func tooLong(path *field.Path, detail string) *field.Error {
	return &field.Error{Type: field.ErrorTypeTooLong, Field: path.String(), BadValue: field.OmitValueType{}, Detail: detail}
}
