package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AtSpec says when to run what, in the book's two fields.
//
// A v1beta1 At has more to say (spec.timeZone, spec.template, deadlines,
// retries, suspension, a time to live); seen through v1alpha1 those fields
// are kept in the annotation cnat.programming-kubernetes.info/conversion-data
// and come back unchanged when the object is written through v1alpha1 again.
type AtSpec struct {
	// Schedule is the time the command runs, once: a UTC time such as
	// 2019-04-12T10:12:00Z (https://www.utctime.net), or any RFC 3339 time
	// with an offset such as 2019-04-12T12:12:00+02:00. A time in the past
	// runs at once.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\\\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$')",message="spec.schedule must be an RFC 3339 time with an offset, such as 2019-04-12T10:12:00Z or 2019-04-12T12:12:00+02:00"
	Schedule string `json:"schedule,omitempty"`

	// Command is the command to run, a shell line executed with /bin/sh -c
	// in a Pod, such as "echo YAY".
	//
	// +optional
	// +kubebuilder:validation:MaxLength=32768
	Command string `json:"command,omitempty"`
}

// The phases of an At in v1alpha1. v1beta1 tells more: its Pending is
// PENDING, its Running is RUNNING, and its Succeeded, Failed and Missed are
// all DONE (the exact v1beta1 phase is kept in the conversion-data
// annotation).
const (
	// PhasePending: the command has not run yet.
	PhasePending = "PENDING"
	// PhaseRunning: the command runs.
	PhaseRunning = "RUNNING"
	// PhaseDone: the At is finished; the command ran, failed or was missed.
	PhaseDone = "DONE"
)

// AtStatus is what happened, written by the controller.
//
// Seen through v1alpha1, everything else the controller records in v1beta1
// (the exact phase, conditions, times, Pod name, attempts, exit code, reason
// and message) is kept in the annotation
// cnat.programming-kubernetes.info/conversion-data.
type AtStatus struct {
	// Phase is the state of the At: PENDING until the command runs, RUNNING
	// while it runs, DONE afterwards, whether it succeeded, failed or was
	// missed.
	//
	// +optional
	// +kubebuilder:validation:Enum=PENDING;RUNNING;DONE;""
	Phase string `json:"phase,omitempty"`
}

// At runs a command once, in a Pod, at a given time: the book's version.
//
// v1alpha1 is served beside v1beta1, the storage version, so the book's
// manifests work unchanged. Every v1alpha1 object is converted to v1beta1
// and back without loss; see the package documentation.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=at,categories=all
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Command",type=string,JSONPath=`.spec.command`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type At struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// spec says when to run what.
	// +optional
	Spec AtSpec `json:"spec,omitzero"`

	// status is what happened, written by the controller.
	// +optional
	Status AtStatus `json:"status,omitzero"`
}

// AtList is a list of At objects.
//
// +kubebuilder:object:root=true
type AtList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitzero"`
	Items           []At `json:"items"`
}
