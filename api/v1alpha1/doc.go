// Package v1alpha1 contains the v1alpha1 API of cnat, the At kind as the
// book Programming Kubernetes has it: spec.schedule, spec.command and
// status.phase (PENDING, RUNNING, DONE). It is served beside v1beta1 so that
// the book's manifests and clients work unchanged; v1beta1 is the storage
// version and the hub of conversion (see v1beta1.At.Hub), and every
// v1alpha1 At is stored as a v1beta1 At.
//
// # One set of rules
//
// Beside the book's fields, v1alpha1 has every field of v1beta1, the Pod
// template included, with the same schema and CEL rules: a v1alpha1 request
// is held to what a v1beta1 request is, even where no admission webhook runs
// (the API server validates a custom resource against the schema of the
// version the request uses), down to spec.template not changing once the At
// has fired. The status is the v1beta1 status, with the phase in the book's
// enum and status.outcome telling which end a DONE At came to. Since all of
// the status is in status, the API server's rule for a resource with a
// status subresource (a write to the main resource keeps the stored status,
// in the request's version) keeps it the controller's in v1alpha1 as well.
//
// # Conversion
//
// Conversion is a mapping of fields, the same both ways, and cannot fail on
// an At:
//
//	v1alpha1                          v1beta1
//	metadata                     <->  metadata
//	spec.<field>                 <->  spec.<field>, every field
//	status.phase PENDING         <->  status.phase Pending
//	status.phase RUNNING         <->  status.phase Running
//	status.phase DONE, outcome X <->  status.phase X (Succeeded, Failed, Missed)
//	status.phase DONE, no outcome -> status.phase Succeeded
//	status.<field>               <->  status.<field>
//
// So, for every object the API can hold (times to the second, as the API
// serializes them), v1beta1 -> v1alpha1 -> v1beta1 gives back the same
// v1beta1 object, and v1alpha1 -> v1beta1 -> v1alpha1 the same v1alpha1
// object. Both are fuzzed.
//
// # The former template annotation
//
// Before v1alpha1 had spec.template, its form of an At carried the template
// as JSON in the annotation cnat.programming-kubernetes.info/conversion-data
// (FormerTemplateAnnotation). That annotation means nothing to the
// conversion any more: it is copied like any other, so nothing a client
// sends is dropped. A manifest or client still written for the former form
// would lose its template without noticing, so the validating webhook
// refuses an At carrying the annotation whenever it validates the spec
// (every create, every update that changes the spec), naming the annotation
// and saying to move the template to spec.template.
package v1alpha1
