package manifests

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fluxcd/pkg/ssa/utils"
)

// Ref names an object the way cnatctl prints it: Kind/namespace/name, or
// Kind/name for a cluster-scoped object (fluxcd/pkg/ssa's format).
func Ref(u *unstructured.Unstructured) string {
	return utils.FmtUnstructured(u)
}

// countOf says "1 object" or "3 objects", "1 At" or "3 Ats".
func countOf(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Problem is what went wrong with one object, named by its Ref.
type Problem struct {
	Object string
	Err    error
}

func (p Problem) Error() string { return p.Object + ": " + p.Err.Error() }

func (p Problem) Unwrap() error { return p.Err }

// Problems is every object that failed, so that one run reports all of them
// instead of stopping at the first.
type Problems []Problem

// Error lists the problems, one per line.
func (ps Problems) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s failed:", countOf(len(ps), "object"))
	for _, p := range ps {
		b.WriteString("\n  " + p.Error())
	}
	return b.String()
}

// Unwrap returns the problems as errors, for errors.Is and errors.As.
func (ps Problems) Unwrap() []error {
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = p
	}
	return errs
}
