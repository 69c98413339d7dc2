package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AtSpec says when to run what.
//
// +kubebuilder:validation:XValidation:rule="has(self.command) || has(self.template)",message="spec.command or spec.template must be set: a shell line to run with /bin/sh -c, or a Pod template whose first container is run"
// +kubebuilder:validation:XValidation:rule="has(self.timeZone) || self.schedule.matches('^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\\\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$')",message="spec.schedule must be an RFC 3339 time with an offset, such as 2026-11-21T09:00:00Z or 2026-11-21T09:00:00+01:00, or a wall-clock time such as 2026-11-21T09:00:00 together with spec.timeZone",fieldPath=".schedule"
// +kubebuilder:validation:XValidation:rule="!has(self.timeZone) || self.schedule.matches('^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\\\\.[0-9]+)?)?$')",message="spec.schedule must be a wall-clock time without offset, such as 2026-11-21T09:00:00, when spec.timeZone is set",fieldPath=".schedule"
type AtSpec struct {
	// When the command runs, once: an RFC 3339 time with an offset
	// (2026-11-21T09:00:00Z, 2026-11-21T09:00:00+01:00) or, together with
	// timeZone, a wall-clock time without offset (2026-11-21T09:00:00 or
	// 2026-11-21T09:00). A time in the past runs at once, unless
	// startingDeadlineSeconds says it is too late. Cannot change once the At
	// has fired.
	//
	// +required
	// +kubebuilder:validation:MinLength=16
	// +kubebuilder:validation:MaxLength=64
	Schedule string `json:"schedule,omitempty"`

	// The IANA time zone, such as Europe/Berlin, in which a wall-clock
	// schedule is read. A time skipped by a daylight-saving change runs later
	// by the length of the gap (02:30 on a spring-forward day runs at 03:30);
	// a time that happens twice runs at its first occurrence. Cannot change
	// once the At has fired.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9_+\-]*(/[A-Za-z0-9_+\-]+)*$`
	TimeZone *string `json:"timeZone,omitempty"`

	// The shell line to run, with /bin/sh -c: in the controller's default
	// image when template is not set, otherwise in the template's first
	// container, replacing its command and args. At most 32768 characters and
	// 131071 bytes (the kernel's limit for one argument), without NUL. Set
	// command, template, or both. Cannot change once the At has fired.
	//
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32768
	// +kubebuilder:validation:XValidation:rule="!self.contains('\\u0000')",message="spec.command must not contain a NUL character: no program can be given one in an argument"
	// +kubebuilder:validation:XValidation:rule="bytes(self).size() <= 131071",message="spec.command must be at most 131071 bytes in UTF-8 (the kernel's limit for one argument, 128 KiB with its terminating NUL)"
	Command string `json:"command,omitempty"`

	// The Pod that runs the command: image, env, resources, service account,
	// volumes (its fields: `kubectl explain pod.spec`). Its restartPolicy is
	// always Never; security settings it leaves unset get the values of the
	// restricted Pod Security Standard (non-root, no privilege escalation, no
	// capabilities, RuntimeDefault seccomp). Without command, its first
	// container runs as the template says. Its labels and annotations may
	// not use keys under cnat.programming-kubernetes.info/: those are the
	// claims and records cnat puts on its Pods. Cannot change once the At
	// has fired.
	//
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.metadata) || !has(self.metadata.labels) || !self.metadata.labels.exists(k, k.startsWith('cnat.programming-kubernetes.info/'))",message="must not carry a label under cnat.programming-kubernetes.info/: those keys are the claims and records cnat puts on the Pods it creates",messageExpression="'must not carry the label ' + self.metadata.labels.filter(k, k.startsWith('cnat.programming-kubernetes.info/'))[0] + ': keys under cnat.programming-kubernetes.info/ are the claims and records cnat puts on the Pods it creates'",fieldPath=".metadata.labels",reason="FieldValueForbidden"
	// +kubebuilder:validation:XValidation:rule="!has(self.metadata) || !has(self.metadata.annotations) || !self.metadata.annotations.exists(k, k.startsWith('cnat.programming-kubernetes.info/'))",message="must not carry an annotation under cnat.programming-kubernetes.info/: those keys are the claims and records cnat puts on the Pods it creates",messageExpression="'must not carry the annotation ' + self.metadata.annotations.filter(k, k.startsWith('cnat.programming-kubernetes.info/'))[0] + ': keys under cnat.programming-kubernetes.info/ are the claims and records cnat puts on the Pods it creates'",fieldPath=".metadata.annotations",reason="FieldValueForbidden"
	Template *corev1.PodTemplateSpec `json:"template,omitempty"`

	// How late the run may still start, in whole seconds after the schedule:
	// if it cannot start within that many full seconds, it is not run and the
	// At is Missed (0: within the second it was due). Applies to the first
	// attempt; retries follow backoffLimit. Unset: no deadline.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	StartingDeadlineSeconds *int64 `json:"startingDeadlineSeconds,omitempty"`

	// Holds the run while true: the first attempt, or the next one after a
	// failure, does not start until it is false again. An attempt that runs is
	// not stopped. Resumed after its starting deadline, the At is Missed.
	//
	// +optional
	Suspend *bool `json:"suspend,omitempty"`

	// The longest one attempt may run, in seconds: then its Pod is stopped
	// (the Pod's own activeDeadlineSeconds, enforced by the kubelet) and the
	// attempt fails with reason DeadlineExceeded, retried within backoffLimit.
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2147483647
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// How many times a failed run is retried, each time in a new Pod, after
	// 10s, 20s, 40s... (at most 6 minutes). 0, the default, runs the command
	// once. An attempt interrupted before its command started is retried
	// without counting.
	//
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`

	// How long the At is kept after it finished (Succeeded, Failed or Missed),
	// in seconds; then it is deleted, and with it its Pods. Unset: it is kept.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// Phase is where an At is in its life: Pending until it runs, Running while
// its Pod runs, then Succeeded, Failed or Missed.
//
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Failed;Missed
type Phase string

const (
	// PhasePending: waiting for the schedule (or suspended).
	PhasePending Phase = "Pending"
	// PhaseRunning: a Pod of this At runs, or waits between retries.
	PhaseRunning Phase = "Running"
	// PhaseSucceeded: the command exited 0.
	PhaseSucceeded Phase = "Succeeded"
	// PhaseFailed: the last attempt failed and no retry is left.
	PhaseFailed Phase = "Failed"
	// PhaseMissed: the starting deadline passed before the run could start.
	PhaseMissed Phase = "Missed"
)

// Finished reports whether the phase is terminal: nothing more will happen.
func (p Phase) Finished() bool {
	return p == PhaseSucceeded || p == PhaseFailed || p == PhaseMissed
}

// AtStatus is what happened, written by the controller.
type AtStatus struct {
	// Where the At is in its life: Pending until it runs, Running while an
	// attempt runs or a retry waits, then Succeeded, Failed or Missed, which
	// never change.
	//
	// +optional
	Phase Phase `json:"phase,omitempty"`

	// The metadata.generation of the spec this status describes.
	//
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// The instant the schedule denotes.
	//
	// +optional
	ScheduledTime *metav1.Time `json:"scheduledTime,omitempty"`

	// When the Pod of the first attempt was created.
	//
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// When the controller saw the At finish, on its own clock;
	// ttlSecondsAfterFinished counts from it.
	//
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// The name of the latest attempt's Pod: <At name>-<first 8 characters of
	// the At's UID>-<attempt>.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=253
	PodName string `json:"podName,omitempty"`

	// How many attempts were started, each in a Pod of its own.
	//
	// +optional
	Attempts int32 `json:"attempts,omitempty"`

	// How many of the attempts before the latest were interrupted before their
	// command started (their Pod evicted, preempted, or taken off its node
	// before it ran). They do not count against backoffLimit: nothing ran.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	UnstartedAttempts int32 `json:"unstartedAttempts,omitempty"`

	// When the next attempt starts, once the latest failed and backoffLimit
	// allows another: when the controller saw the failure, plus the backoff,
	// both on the controller's clock (a node's clock never moves it).
	//
	// +optional
	RetryTime *metav1.Time `json:"retryTime,omitempty"`

	// The exit code of the command in the latest finished attempt.
	//
	// +optional
	ExitCode *int32 `json:"exitCode,omitempty"`

	// Why the At is in its phase, in one CamelCase word, such as Scheduled,
	// Running, PodPending, Retrying, Completed, Error, BackoffLimitExceeded,
	// DeadlineExceeded, PodDeleted, Disrupted, Missed, InvalidSpec or
	// PodForbidden.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason,omitempty"`

	// What happened last, for people: which Pod runs which attempt, why a Pod
	// does not start or was refused, how the command ended. At most 32768
	// characters: longer text, such as a refusal or a Pod's message, is cut
	// and ends in "... (truncated)".
	//
	// +optional
	// +kubebuilder:validation:MaxLength=32768
	Message string `json:"message,omitempty"`

	// The At's state in the standard form: Ready, Reconciling and Stalled,
	// which tools such as kstatus and Flux read, and the outcomes Succeeded
	// and Failed, for `kubectl wait --for=condition=Succeeded`.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// At runs a command once, in a Pod, at a given time.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=at,categories=all
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Time Zone",type=string,JSONPath=`.spec.timeZone`
// +kubebuilder:printcolumn:name="Command",type=string,JSONPath=`.spec.command`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Exit Code",type=integer,JSONPath=`.status.exitCode`,priority=1
// +kubebuilder:printcolumn:name="Pod",type=string,JSONPath=`.status.podName`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:selectablefield:JSONPath=`.status.phase`
// +kubebuilder:selectablefield:JSONPath=`.status.scheduledTime`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63",message="metadata.name must be at most 63 characters: it is the value of the cnat.programming-kubernetes.info/at label on the At's Pods"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.status) || !has(oldSelf.status.attempts) || oldSelf.status.attempts == 0 || (self.spec.schedule == oldSelf.spec.schedule && has(self.spec.timeZone) == has(oldSelf.spec.timeZone) && (!has(self.spec.timeZone) || self.spec.timeZone == oldSelf.spec.timeZone))",message="spec.schedule and spec.timeZone cannot change once the At has fired",fieldPath=".spec.schedule",reason="FieldValueForbidden"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.status) || !has(oldSelf.status.attempts) || oldSelf.status.attempts == 0 || (has(self.spec.command) == has(oldSelf.spec.command) && (!has(self.spec.command) || self.spec.command == oldSelf.spec.command))",message="spec.command cannot change once the At has fired",fieldPath=".spec.command",reason="FieldValueForbidden"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.status) || !has(oldSelf.status.attempts) || oldSelf.status.attempts == 0 || (has(self.spec.template) == has(oldSelf.spec.template) && (!has(self.spec.template) || self.spec.template == oldSelf.spec.template))",message="spec.template cannot change once the At has fired",fieldPath=".spec.template",reason="FieldValueForbidden"
type At struct {
	metav1.TypeMeta `json:",inline"`

	// Standard object metadata. The name is at most 63 characters: it is the
	// value of a label on the At's Pods.
	//
	// +optional
	metav1.ObjectMeta `json:"metadata,omitzero"`

	// When to run which command, and how: the Pod, retries, deadlines.
	//
	// +required
	Spec AtSpec `json:"spec,omitzero"`

	// What happened, written by the controller.
	//
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
