// Package v1alpha1 contains the v1alpha1 API of cnat, the At kind exactly as
// the book Programming Kubernetes has it: spec.schedule, spec.command and
// status.phase (PENDING, RUNNING, DONE). It is served beside v1beta1 so that
// the book's manifests and clients work unchanged; v1beta1 is the storage
// version and the hub of conversion (see v1beta1.At.Hub), and every
// v1alpha1 At is stored as a v1beta1 At.
//
// # Conversion
//
// Converting between the versions maps:
//
//	v1alpha1                 v1beta1
//	metadata            <->  metadata
//	spec.schedule       <->  spec.schedule
//	spec.command        <->  spec.command
//	status.phase PENDING <-> Pending
//	status.phase RUNNING <-> Running
//	status.phase DONE    <-  Succeeded, Failed, Missed
//	status.phase DONE     -> Succeeded
//	status.phase ""     <->  ""
//
// Values outside the enums are copied as they are.
//
// Conversion is lossless both ways, as Cluster API does it: a v1beta1 At seen
// through v1alpha1 keeps, as JSON in the annotation
// cnat.programming-kubernetes.info/conversion-data
// (ConversionDataAnnotation), everything v1alpha1 has no field for: the
// spec fields timeZone, template, startingDeadlineSeconds, suspend,
// activeDeadlineSeconds, backoffLimit and ttlSecondsAfterFinished, and the
// status (conditions, times, Pod name, attempts, exit code, reason,
// message, and the exact phase when v1alpha1's does not tell it: Failed and
// Missed). For example:
//
//	cnat.programming-kubernetes.info/conversion-data: '{"spec":{"timeZone":"Europe/Berlin","backoffLimit":2},"status":{"phase":"Failed","observedGeneration":1,"attempts":3,"exitCode":1,"reason":"BackoffLimitExceeded"}}'
//
// The value is one JSON object with the members, each left out when it has
// nothing to keep:
//
//	spec        the v1beta1 spec without schedule and command, which
//	            v1alpha1 carries itself
//	status      the v1beta1 status; its phase only when it is Failed or
//	            Missed (or outside the enum), as the v1alpha1 phase gives
//	            back the others
//	annotation  the v1beta1 object's own value under this key, if it has
//	            one (a user may write any annotation)
//
// The annotation is written only when there is something to keep, so the
// v1alpha1 form of an At created through v1alpha1 and not yet touched by the
// controller has none.
//
// Converting back to v1beta1 restores what the annotation holds and takes
// the annotation off, then applies what the v1alpha1 object says on top:
// schedule and command as they are (they may have been edited through
// v1alpha1), and the phase kept in the annotation only while the v1alpha1
// phase is still the one it maps to (DONE for Failed), otherwise the
// v1alpha1 phase mapped as above. An annotation that is not of this form (not
// JSON, an array, wrong types, or nothing to restore) is not an error: the
// plain mapping applies and it stays on the v1beta1 object as an ordinary
// annotation. Unknown members are ignored.
//
// So, for every object the API can hold (times to the second, as the API
// serializes them), v1beta1 -> v1alpha1 -> v1beta1 gives back the same
// v1beta1 object, and v1alpha1 -> v1beta1 -> v1alpha1 the same v1alpha1
// object: one without the annotation, with one that is not conversion data,
// or as read through v1alpha1, with schedule and command perhaps edited. A
// status.phase edited through v1alpha1 wins over the one in the annotation,
// which is then written anew. The one value that does not come back is a
// v1alpha1 phase that the v1alpha1 schema rejects and that is a v1beta1
// phase name: v1alpha1 "Failed" is read as the v1beta1 phase Failed, which
// is DONE in v1alpha1.
package v1alpha1
