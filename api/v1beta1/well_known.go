package v1beta1

// Condition types an At reports. Ready, Reconciling and Stalled follow the
// kstatus conventions, so kstatus, Flux and fluxcd/pkg/ssa read an At's
// health with no custom code; Succeeded and Failed are the outcomes, for
// `kubectl wait --for=condition=Succeeded`.
const (
	// ConditionReady is True while the At is on track (waiting for its
	// schedule, suspended, or Succeeded) and False while it runs or after it
	// failed or was missed.
	ConditionReady = "Ready"
	// ConditionReconciling is True while a run is in progress.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True when the At ended without success (Failed or
	// Missed) or its spec cannot be acted on.
	ConditionStalled = "Stalled"
	// ConditionSucceeded is True once the command exited 0, False once the At
	// finished otherwise.
	ConditionSucceeded = "Succeeded"
	// ConditionFailed is True once the last attempt failed with no retry
	// left, False once the At finished otherwise.
	ConditionFailed = "Failed"
)

// Reasons used in conditions, in status.reason and in Events.
const (
	ReasonScheduled            = "Scheduled"
	ReasonSuspended            = "Suspended"
	ReasonRunning              = "Running"
	ReasonRetrying             = "Retrying"
	ReasonCompleted            = "Completed"
	ReasonError                = "Error"
	ReasonBackoffLimitExceeded = "BackoffLimitExceeded"
	ReasonDeadlineExceeded     = "DeadlineExceeded"
	ReasonPodDeleted           = "PodDeleted"
	ReasonMissed               = "Missed"
	ReasonInvalidSpec          = "InvalidSpec"
	// ReasonPodForbidden: something other than the Pod's own fields refused
	// to let it be created (a quota, a ValidatingAdmissionPolicy, an
	// admission webhook, Pod Security admission). Retried with a bounded
	// backoff: these change without the At changing.
	ReasonPodForbidden = "PodForbidden"
	// ReasonPodCreateFailed: the API server could not create the Pod (an
	// error of its own, a webhook it could not call, a timeout). Retried
	// with a bounded backoff.
	ReasonPodCreateFailed = "PodCreateFailed"
	// ReasonPodStopping: the attempt's Pod is being deleted with its grace
	// period, or was disrupted (evicted, preempted, its node lost), but its
	// node has not said that the command stopped. Nothing runs again until
	// it has, and the attempt counts as interrupted whatever the Pod reads
	// afterwards.
	ReasonPodStopping = "PodStopping"
	// ReasonDisrupted: the attempt's command was interrupted by a disruption
	// (the Pod's DisruptionTarget condition: eviction, preemption, a taint,
	// its node's loss) and no retry is left.
	ReasonDisrupted = "Disrupted"
	// ReasonPodNameTaken: a Pod that is not this At's has the name of the
	// Pod the At would create; it is never adopted or changed.
	ReasonPodNameTaken = "PodNameTaken"
	// ReasonPodPending: the attempt's Pod exists but its command has not
	// started yet; the message says why (unschedulable, image pull...).
	ReasonPodPending = "PodPending"
	// ReasonPodInvalid: the API server refused the Pod's fields as its
	// environment shapes them now (a LimitRange's defaults, a mutating
	// policy), though the same spec passed the same validation when the At
	// was admitted. Retried with a bounded backoff until the starting
	// deadline.
	ReasonPodInvalid = "PodInvalid"
	// ReasonAuthorForbidden: the user who last set the At's spec
	// (AnnotationAuthor) may not create Pods in its namespace now. Asked
	// again with a bounded backoff until the starting deadline, so restored
	// rights resume the At.
	ReasonAuthorForbidden = "AuthorForbidden"
	// ReasonCommandRestarted: the command's container restarted within one
	// attempt (someone changed the running Pod): its command ran more than
	// once, which is never one clean run.
	ReasonCommandRestarted = "CommandRestarted"
)

// ReasonStarted was the reason of the Event that announced an attempt's
// start.
//
// Deprecated: the controller no longer emits it: the Reconciling condition,
// status.attempts and status.startTime say it. Kept so that code that names
// it still compiles.
const ReasonStarted = "Started"

// Bounds of the status strings, as the CRD schema states them (the
// +kubebuilder:validation markers on AtStatus, in both versions, must say the
// same). The controller cuts what it copies from elsewhere (a refusal of the
// API server, a webhook's or a kubelet's message) to fit them: a status the
// schema refuses would leave the At without any.
const (
	// MaxMessageLength is the longest status.message and condition
	// message, in characters (Unicode code points, as the API server
	// counts them): metav1.Condition's own bound.
	MaxMessageLength = 32768
	// MaxReasonLength is the longest status.reason: metav1.Condition's bound
	// for a reason.
	MaxReasonLength = 1024
	// MaxPodNameLength is the longest status.podName: a Pod name is a DNS
	// subdomain.
	MaxPodNameLength = 253
	// MaxConditions is the most conditions an At's status holds: the five
	// it reports (Ready, Reconciling, Stalled, Succeeded, Failed) and room
	// for three more.
	MaxConditions = 8
)

// Field managers under which cnat writes (the controller's apply of an
// At's status has its own, atstatus.StatusFieldManager, beside that
// apply). The API server records in managedFields which manager wrote which
// field, so the Pods the controller creates, the status it applies and what
// cnatctl applies are told apart, and neither applier takes the other's
// fields.
const (
	// FieldManager is the controller writing anything but an At's status:
	// it creates the Pods (never applies them) and removes their tracking
	// finalizer.
	FieldManager = "cnat-controller"
	// CLIFieldManager owns what cnatctl applies.
	CLIFieldManager = "cnatctl"
)

// KeyPrefix starts every label, annotation and finalizer key of cnat's. An
// At's template may carry none: they are the claims and records cnat reads
// on its Pods.
const KeyPrefix = "cnat.programming-kubernetes.info/"

// AnnotationAuthor, on an At, is the user who last set its spec, as JSON
// (authenticationv1.UserInfo: username, uid, groups, extra). The admission
// webhooks write it and refuse it from anyone else; the controller asks
// whether that user may still create Pods in the At's namespace when it
// creates the At's Pod.
const AnnotationAuthor = "cnat.programming-kubernetes.info/author"

// Labels and annotations cnat puts on the Pods it creates.
const (
	// LabelAt names the At a Pod runs for. The controller's Pod cache
	// selects on it, so it holds only cnat's Pods.
	LabelAt = "cnat.programming-kubernetes.info/at"
	// LabelAtUID is the UID of the At incarnation a Pod runs for. An At
	// deleted and created again under the same name is another incarnation:
	// its Pods are never the old one's.
	LabelAtUID = "cnat.programming-kubernetes.info/at-uid"
	// LabelAttempt is the attempt number (1, 2, ...) a Pod runs.
	LabelAttempt = "cnat.programming-kubernetes.info/attempt"
	// LabelReleased ("true") is put on a Pod with the removal of its
	// TrackingFinalizer: the At's status accounts for it (or its At is
	// gone), and no decision reads it again. The controller's Pod cache
	// selects Pods without it, so thousands of settled Ats keep none of
	// their Pods in its memory.
	LabelReleased = "cnat.programming-kubernetes.info/released"
	// TrackingFinalizer keeps a Pod of cnat's in the API server until the
	// controller has recorded the attempt's outcome in the At's status, so
	// that no run can vanish uncounted and none is started twice. The
	// controller removes it once the status says how the attempt ended (or
	// that a later attempt superseded it), and at once from the Pods of an At
	// that is gone. The Job controller's batch.kubernetes.io/job-tracking
	// finalizer is the model.
	TrackingFinalizer = "cnat.programming-kubernetes.info/tracking"
	// AnnotationScheduledTime is the instant the At was scheduled for, in
	// RFC 3339.
	AnnotationScheduledTime = "cnat.programming-kubernetes.info/scheduled-time"
	// AnnotationSpecGeneration is the At's metadata.generation when its Pod
	// was created, and AnnotationSpecHash a digest of what the Pod runs
	// (spec.command, spec.template, spec.activeDeadlineSeconds): an edit
	// that raced the firing (admitted before the Pod existed, stored after
	// the controller read the At) is told on the At, never silently.
	AnnotationSpecGeneration = "cnat.programming-kubernetes.info/spec-generation"
	AnnotationSpecHash       = "cnat.programming-kubernetes.info/spec-hash"
	// FieldScheduledTime and FieldPhase are the field selectors of
	// status.scheduledTime (in RFC 3339, UTC, as the API server holds it)
	// and status.phase, selectable fields of the CRD: `kubectl get ats
	// --field-selector status.phase=Failed`. The controller lists the Ats due
	// at one instant with the first.
	FieldScheduledTime = "status.scheduledTime"
	FieldPhase         = "status.phase"
)
