package webhook

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// MaxCommandBytes is the longest string execve passes to a program
// (MAX_ARG_STRLEN, 131072 bytes with its NUL): spec.command, each argument
// and each environment string NAME=value.
const MaxCommandBytes = 131071

// MaxExecBytes is the most one container's process may receive in all, each
// string with its NUL and pointer: half the kernel's ARG_MAX with the usual
// stack, since the process receives more than the template says (why:
// docs/reliability.md, the table of limits).
const MaxExecBytes = 1 << 20

// pointerBytes is the pointer to each string in argv or envp (64-bit).
const pointerBytes = 8

// validateLimits refuses what would be stored but could never run, or would
// not do what its writer meant: NULs, what execve would not pass
// (execStrings), names the API server can never accept.
func validateLimits(at *cnatv1beta1.At) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
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
	errs = append(errs, execStrings(podSpec.Child("initContainers"), t.Spec.InitContainers, "")...)
	errs = append(errs, execStrings(podSpec.Child("containers"), t.Spec.Containers, at.Spec.Command)...)
	// Admission plugins look these up before the Pod's validation and answer
	// an impossible name with Forbidden, which the dry run only warns about.
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

// execStrings refuses, in each of containers, a string longer than
// MaxCommandBytes and a process that would receive more than MaxExecBytes in
// all; command, the At's spec.command, replaces the first container's command
// and args (/bin/sh -c). Only what the template says is counted.
func execStrings(path *field.Path, containers []corev1.Container, command string) field.ErrorList {
	var errs field.ErrorList
	oneString := func(path *field.Path, n int) {
		if n > MaxCommandBytes {
			errs = append(errs, tooLong(path, fmt.Sprintf("must be at most %d bytes in UTF-8 (the kernel's limit for one argument, 128 KiB with its terminating NUL), not %d", MaxCommandBytes, n)))
		}
	}
	for i := range containers {
		c := &containers[i]
		cPath := path.Index(i)
		for j, arg := range c.Command {
			oneString(cPath.Child("command").Index(j), len(arg))
		}
		for j, arg := range c.Args {
			oneString(cPath.Child("args").Index(j), len(arg))
		}
		argv := slices.Concat(c.Command, c.Args)
		if i == 0 && command != "" {
			argv = []string{"/bin/sh", "-c", command}
		}
		total := 0
		for _, arg := range argv {
			total += len(arg) + 1 + pointerBytes
		}
		for j, env := range c.Env {
			// The process receives NAME=value as one string.
			envPath := cPath.Child("env").Index(j)
			if limit := MaxCommandBytes - len(env.Name) - 1; limit < 0 {
				errs = append(errs, tooLong(envPath.Child("name"), fmt.Sprintf("must be at most %d bytes in UTF-8 (with \"=\", the kernel's limit for one environment string, 128 KiB with its terminating NUL), not %d", MaxCommandBytes-1, len(env.Name))))
			} else if len(env.Value) > limit {
				errs = append(errs, tooLong(envPath.Child("value"), fmt.Sprintf("must be at most %d bytes in UTF-8 (%d with %q: the kernel's limit for one environment string, 128 KiB with its terminating NUL), not %d", limit, MaxCommandBytes, env.Name+"=", len(env.Value))))
			}
			total += len(env.Name) + 1 + len(env.Value) + 1 + pointerBytes
		}
		if total > MaxExecBytes {
			errs = append(errs, tooLong(cPath, fmt.Sprintf("the command, arguments and environment its process receives must be at most %d bytes together (each string with its NUL and an 8-byte pointer; half of the kernel's 2 MiB default for all of them, the rest left to what the image and the kubelet add), not %d", MaxExecBytes, total)))
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
