// Package v1alpha1 contains the v1alpha1 API of cnat, the At kind as the
// book Programming Kubernetes has it: spec.schedule, spec.command and
// status.phase (PENDING, RUNNING, DONE). It is served beside v1beta1 so that
// the book's manifests and clients work unchanged; v1beta1 is the storage
// version and the hub of conversion (see v1beta1.At.Hub), and every
// v1alpha1 At is stored as a v1beta1 At.
//
// # One set of rules
//
// Beside the book's fields, v1alpha1 has every field of v1beta1 but the
// template, with the same schema and CEL rules: a v1alpha1 request is held to
// what a v1beta1 request is, even where no admission webhook runs (the API
// server validates a custom resource against the schema of the version the
// request uses). The status is the v1beta1 status, with the phase in the
// book's enum and status.outcome telling which end a DONE At came to. Since
// all of the status is in status, the API server's rule for a resource with
// a status subresource (a write to the main resource keeps the stored status,
// in the request's version) keeps it the controller's in v1alpha1 as well.
//
// # Conversion
//
//	v1alpha1                          v1beta1
//	metadata                     <->  metadata
//	spec.<field>                 <->  spec.<field>, every field but template
//	annotation conversion-data   <->  spec.template
//	status.phase PENDING         <->  status.phase Pending
//	status.phase RUNNING         <->  status.phase Running
//	status.phase DONE, outcome X <->  status.phase X (Succeeded, Failed, Missed)
//	status.phase DONE, no outcome -> status.phase Succeeded
//	status.<field>               <->  status.<field>
//
// The template travels, as cluster-api's MarshalData does it, as JSON in the
// annotation cnat.programming-kubernetes.info/conversion-data
// (ConversionDataAnnotation):
//
//	cnat.programming-kubernetes.info/conversion-data: '{"template":{"spec":{"containers":[{"name":"main","image":"postgres:17"}]}}}'
//
// Writing an At through v1alpha1 reads the annotation strictly: anything but
// {"template":{...}} holding the fields of a Pod template with the right
// types (a resource quantity that parses) is refused, naming the field; the
// annotation cannot carry anything else. Removing the annotation removes the
// template. A v1beta1 At's own value under the key is not shown.
//
// The API server refuses an object whose annotations are together larger
// than 256 KiB, and would fail to serve the v1alpha1 form of an At whose
// template pushes it over that limit: every v1alpha1 LIST and WATCH that
// includes it would fail. The validating webhook refuses such an At; should
// one be stored anyway (the webhook off), its v1alpha1 form carries the label
// cnat.programming-kubernetes.info/template-too-large instead of the
// annotation, so it can still be read, and writing it through v1alpha1 is
// refused.
//
// So, for every object the API can hold (times to the second, as the API
// serializes them), v1beta1 -> v1alpha1 -> v1beta1 gives back the same
// v1beta1 object, and v1alpha1 -> v1beta1 -> v1alpha1 the same v1alpha1
// object. Both are fuzzed.
package v1alpha1
