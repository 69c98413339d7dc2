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
// The two versions differ only in status.phase and status.outcome, so
// Convert, which the conversion webhook serves, works on the JSON the API
// server sends: it rewrites apiVersion and these two, and passes metadata,
// spec and the rest of the status through as they were sent, values of the
// wrong type included (the API server then validates the object against the
// schema of the request's version, which names the field). It is the same
// both ways and cannot fail on an At:
//
//	v1alpha1                          v1beta1
//	apiVersion                   <->  apiVersion
//	status.phase PENDING         <->  status.phase Pending
//	status.phase RUNNING         <->  status.phase Running
//	status.phase DONE, outcome X <->  status.phase X (Succeeded, Failed, Missed)
//	status.phase DONE, no outcome -> status.phase Succeeded
//	everything else              <->  the same, byte for byte
//
// So, for every object the API can hold, v1beta1 -> v1alpha1 -> v1beta1
// gives back the same v1beta1 object, and v1alpha1 -> v1beta1 -> v1alpha1
// the same v1alpha1 object. Both are fuzzed, each step decoded strictly into
// the Go type of its version; a test holds the two versions' generated
// schemas to differing only in phase and outcome.
package v1alpha1
