package v1beta1

import "sigs.k8s.io/controller-runtime/pkg/conversion"

var _ conversion.Hub = &At{}

// Hub marks v1beta1, the storage version, as the hub of At conversions:
// every other version of At (v1alpha1, the book's) converts to and from
// v1beta1, and the API server reaches any version from any other through it.
// See the package documentation of api/v1alpha1 for how the fields map.
func (*At) Hub() {}
