// Package lifecycle is the life of an At as one pure function: Decide takes
// the At, the Pods that carry its name and the time, and returns the status
// the At should have and the one thing to do next. It has no client and no
// clock: the controller reads, calls Decide, carries out the decision and
// writes the status; tests drive it with any sequence of events they like.
//
// The guarantees it keeps, and that the model-based test checks on random
// histories:
//
//   - A Pod belongs to one At incarnation: it is made for the At's UID (in its
//     name, its labels and its controller owner reference) and no other At,
//     nor a re-created At of the same name, ever adopts, changes or reports it.
//   - At most one Pod per attempt, and at most backoffLimit+1 attempts: an
//     attempt's Pod has a fixed name, a new attempt is only started once the
//     previous one is known to have failed, and never when the status already
//     records that attempt number (a recorded Pod that vanished is reported,
//     not run again).
//   - Nothing lost from the books: every Pod carries the tracking finalizer
//     until the At's status records how its attempt ended (or a later attempt
//     superseded it), so no Pod can vanish uncounted; the finalizer is
//     released at once from the Pods of an At that is gone.
//   - A terminal phase (Succeeded, Failed, Missed) never changes.
package lifecycle

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/atpod"
	"github.com/programming-kubernetes/cnat/internal/scheduler"
)

// Action is the one thing Reconcile does after writing the status.
type Action int

const (
	// Nothing: write the status if it changed, release what Release lists,
	// and look again at Until if it is set.
	Nothing Action = iota
	// CreatePod: create the Pod of Attempt, and nothing else. The Pod is the
	// record of its attempt (latest attempt = the highest of the status's
	// and the Pods'); the decision made once it shows writes the status. If
	// the API server refuses the Pod, the refusal's status (NotCreated) is
	// written instead. Status below is what the At will report once the
	// Pod exists.
	CreatePod
	// DeleteAt: write the status, release what Release lists, then delete
	// the At: its TTL after finishing is up.
	DeleteAt
)

// Decision is what Decide concluded.
type Decision struct {
	// Action is what to do.
	Action Action
	// Status is the status the At should have; nil when there is none to
	// write (the At is gone or being deleted).
	Status *cnatv1beta1.AtStatus
	// Attempt is, for CreatePod, the attempt whose Pod to create.
	Attempt int32
	// ScheduledTime is the instant the At is due (for the Pod's annotation
	// and the lateness metric).
	ScheduledTime time.Time
	// Release lists the Pods whose tracking finalizer may be removed, but
	// only once Status is written: their outcome is in it.
	Release []*corev1.Pod
	// Until is when to look again, if the At waits for a time (its schedule,
	// a retry's backoff, its TTL); zero when no timer is needed.
	Until time.Time
	// Confirm is set when the decision rests on something a lagging cache
	// could show wrongly: it starts a Pod, or it takes a different At (or
	// none) for a fact. Reconcile reads the At from the API server and
	// decides again before it acts. The cached Pods are enough for that: a
	// Pod the cache does not show yet makes the create fail as existing, and
	// Pods are released by UID.
	Confirm bool
	// ConfirmPods is set when the decision takes a Pod's absence for a fact
	// (an attempt the status records whose Pod is gone): Reconcile also lists
	// the Pods from the API server.
	ConfirmPods bool
	// InvalidSpec is set when the spec cannot be acted on. Waiting will not
	// help; the next try comes with the next edit.
	InvalidSpec error
}

// Decide says what the At should look like at now, given the Pods labelled
// with its name (of any incarnation, or not cnat's at all), and what to do.
// at is nil when no At of that name exists. The status it returns is within
// the bounds of the CRD's schema (bound).
func Decide(at *cnatv1beta1.At, pods []corev1.Pod, now time.Time) Decision {
	d := decide(at, pods, now)
	bound(d.Status)
	return d
}

func decide(at *cnatv1beta1.At, pods []corev1.Pod, now time.Time) Decision {
	if at == nil {
		// The At is gone: its Pods' outcomes have nobody left to be recorded
		// for. Confirmed, since a lagging cache may not show an At yet, and
		// every Pod of its name read from the API server, released or not:
		// one the cache does not show would stay Terminating for good.
		return Decision{Release: trackedPods(pods), Confirm: true, ConfirmPods: true}
	}
	if at.DeletionTimestamp != nil {
		return Decision{Release: trackedPods(pods)}
	}
	w := newWorld(at, pods)
	d := Decision{Status: at.Status.DeepCopy()}
	d.Status.ObservedGeneration = at.Generation
	if len(w.others) > 0 {
		// Pods of another incarnation of this name (or someone else's): their
		// At is gone, so their finalizer goes too, once a fresh read confirms
		// that this At is the current one.
		d.Release = w.others
		d.Confirm = true
	}
	if d.Status.Phase.Finished() {
		w.finished(&d, now)
		return d
	}

	scheduled, invalid := ScheduledTime(&at.Spec)
	if invalid != nil {
		phase := d.Status.Phase
		if phase == "" {
			phase = cnatv1beta1.PhasePending
		}
		setPhase(d.Status, at, now, phase, cnatv1beta1.ReasonInvalidSpec, invalid.Error())
		d.InvalidSpec = invalid
		return d
	}
	d.ScheduledTime = scheduled
	// Derived from the spec every time, never read back from the status: a
	// status the controller did not get to write must not be needed.
	d.Status.ScheduledTime = timestamp(scheduled)

	if unmade := w.dropUnmade(now, scheduled); len(unmade) > 0 {
		// Not counted, not followed, and said: someone who may create Pods
		// made a Pod that claims this At (the policy cnat-pod-claims refuses
		// that where it is installed).
		defer func() { d.Status.Message += unmadeNote(unmade) }()
		for _, p := range unmade {
			if tracked(p) {
				d.Release = append(d.Release, p)
			}
		}
	}
	latest := w.latestAttempt()
	if latest == 0 {
		w.notStarted(&d, now, scheduled)
		return d
	}
	pod := w.mine[latest]
	if pod == nil {
		// The status records an attempt whose Pod is gone although its
		// outcome was never recorded: the tracking finalizer was taken off by
		// hand, or the cache lags (hence the confirmation). Whatever ran, it
		// is not run again.
		d.Confirm, d.ConfirmPods = true, true
		d.Status.Attempts = latest
		d.Status.PodName = atpod.PodName(at, latest)
		message := fmt.Sprintf("Pod %s was deleted before its outcome was recorded; it is not run again", d.Status.PodName)
		w.finish(&d, now, cnatv1beta1.PhaseFailed, cnatv1beta1.ReasonPodDeleted, message, podResult{})
		return d
	}
	w.follow(&d, now, latest, pod)
	return d
}

// world is one At and its Pods, sorted.
type world struct {
	at *cnatv1beta1.At
	// mine are the Pods made for this At incarnation, by attempt
	// (atpod.RunOf).
	mine map[int32]*corev1.Pod
	// others are the Pods with the At's name that are not this incarnation's
	// and still carry the tracking finalizer.
	others []*corev1.Pod
}

func newWorld(at *cnatv1beta1.At, pods []corev1.Pod) world {
	w := world{at: at, mine: map[int32]*corev1.Pod{}}
	for i := range pods {
		pod := &pods[i]
		if attempt, err := atpod.RunOf(pod, at); err == nil {
			w.mine[attempt] = pod
			continue
		}
		if tracked(pod) {
			w.others = append(w.others, pod)
		}
	}
	return w
}

// read reads one of the At's Pods (readPod), with what the At's status
// recorded of it: a Pod the status reported as stopping (PodStopping) was
// being deleted or disrupted before it finished, whatever it reads now; one
// it reported failed (a retry time) had finished before any deletion.
func (w world) read(pod *corev1.Pod) podResult {
	st := w.at.Status
	recorded := st.PodName == pod.Name
	// A retry time is recorded only with the failure of the attempt before.
	return readPod(pod, recorded && st.Reason == cnatv1beta1.ReasonPodStopping, recorded && st.RetryTime != nil)
}

// dropUnmade takes out of w.mine the Pods that claim an attempt of this At
// but that the controller cannot have made, and returns them. The controller
// makes attempt 1 once the At is due on its clock, and attempt n+1 only
// after the Pod of attempt n failed or was disrupted (or once the status
// records attempt n+1 or later). So a Pod of attempt 1 before the At's time,
// or of an attempt whose predecessor runs, succeeded or was never made, is
// someone else's: counting it would report a run that never happened, or
// let a running attempt go and start another beside it.
func (w *world) dropUnmade(now, scheduled time.Time) []*corev1.Pod {
	var unmade []*corev1.Pod
	attempts := make([]int32, 0, len(w.mine))
	for attempt := range w.mine {
		attempts = append(attempts, attempt)
	}
	slices.Sort(attempts)
	for _, attempt := range attempts {
		var made bool
		switch {
		case attempt <= w.at.Status.Attempts:
			made = true
		case attempt == 1:
			made = !now.Before(scheduled)
		default:
			prev := w.mine[attempt-1]
			if prev != nil {
				state := w.read(prev).state
				made = state == podFailed || state == podDisrupted
			}
		}
		if !made {
			pod := w.mine[attempt]
			unmade = append(unmade, pod)
			delete(w.mine, attempt)
			if tracked(pod) {
				// Released like any Pod that is not this At's.
				w.others = append(w.others, pod)
			}
		}
	}
	return unmade
}

// unmadeNote is what the At says of Pods that claim it but that cnat did
// not make.
func unmadeNote(pods []*corev1.Pod) string {
	names := make([]string, 0, len(pods))
	for _, p := range pods {
		names = append(names, p.Name)
	}
	return fmt.Sprintf("; Pod %s claims this At but cnat did not make it: not counted", strings.Join(names, ", "))
}

// latestAttempt is the highest attempt this incarnation is known to have
// started: recorded in its status, or with a Pod of its own. The Pods win
// when the controller stopped between creating a Pod and recording it; the
// status wins when a recorded Pod vanished, so that its attempt is never
// started again.
func (w world) latestAttempt() int32 {
	latest := w.at.Status.Attempts
	for attempt := range w.mine {
		latest = max(latest, attempt)
	}
	return latest
}

// notStarted decides for an At that has started no attempt: wait for its
// time, hold it while suspended, miss it past its deadline, or start it.
func (w world) notStarted(d *Decision, now, scheduled time.Time) {
	plan := scheduler.Plan{
		ScheduledTime:           scheduled,
		StartingDeadlineSeconds: w.at.Spec.StartingDeadlineSeconds,
		Suspend:                 ptr.Deref(w.at.Spec.Suspend, false),
	}
	when := scheduled.UTC().Format(time.RFC3339)
	switch plan.Timing(now) {
	case scheduler.Early:
		setPhase(d.Status, w.at, now, cnatv1beta1.PhasePending, cnatv1beta1.ReasonScheduled, "Runs at "+when)
		d.Until = scheduled
	case scheduler.Suspended:
		setPhase(d.Status, w.at, now, cnatv1beta1.PhasePending, cnatv1beta1.ReasonSuspended, "Suspended; scheduled for "+when)
	case scheduler.Missed:
		// Final, and it rests on no Pod having been started: a Pod created
		// just before a crash may not be in the cache yet.
		d.Confirm, d.ConfirmPods = true, true
		w.finish(d, now, cnatv1beta1.PhaseMissed, cnatv1beta1.ReasonMissed, fmt.Sprintf(
			"Not run: scheduled for %s, its starting deadline of %ds had passed at %s",
			when, *w.at.Spec.StartingDeadlineSeconds, now.UTC().Format(time.RFC3339)), podResult{})
	default: // scheduler.Due
		w.start(d, now, 1)
	}
}

// start decides to create the Pod of attempt, and the status that reports it.
func (w world) start(d *Decision, now time.Time, attempt int32) {
	d.Action = CreatePod
	d.Attempt = attempt
	d.Confirm = true
	d.Status.Attempts = attempt
	d.Status.PodName = atpod.PodName(w.at, attempt)
	d.Status.RetryTime = nil
	if d.Status.StartTime == nil {
		d.Status.StartTime = timestamp(now)
	}
	setPhase(d.Status, w.at, now, cnatv1beta1.PhaseRunning, cnatv1beta1.ReasonRunning, w.runningMessage(attempt, d.Status.UnstartedAttempts))
}

// follow decides for an At whose latest attempt has a Pod: report it while it
// waits or runs, record how it ended, retry it after its backoff.
func (w world) follow(d *Decision, now time.Time, latest int32, pod *corev1.Pod) {
	// The retry time recorded belongs to the attempt the status recorded;
	// a later attempt has none until it fails.
	recordedRetry := d.Status.RetryTime
	if d.Status.Attempts != latest {
		recordedRetry = nil
	}
	d.Status.RetryTime = nil
	d.Status.UnstartedAttempts = w.unstartedBefore(latest)
	d.Status.Attempts = latest
	d.Status.PodName = pod.Name
	if d.Status.StartTime == nil {
		first := pod
		if p := w.mine[1]; p != nil {
			first = p
		}
		d.Status.StartTime = timestamp(first.CreationTimestamp.Time)
	}
	// The attempts before the latest ended in failures the status has
	// already accounted for (a later attempt was started): their Pods may go.
	for attempt, p := range w.mine {
		if attempt < latest && tracked(p) {
			d.Release = append(d.Release, p)
		}
	}

	result := w.read(pod)
	defer w.noteEarlierSpec(d, pod)
	if result.restarts > 0 && (result.state == podSucceeded || result.state == podFailed) {
		// Final, and it rests on no later attempt's Pod: the cache may lag.
		d.Confirm, d.ConfirmPods = true, true
		w.finish(d, now, cnatv1beta1.PhaseFailed, cnatv1beta1.ReasonCommandRestarted, fmt.Sprintf(
			"Pod %s of attempt %d was changed while it ran and its command's container restarted %d time(s): the command ran more than once; it is not run again",
			pod.Name, latest, result.restarts), result)
		return
	}
	switch result.state {
	case podWaiting:
		reason, message := cnatv1beta1.ReasonRunning, w.runningMessage(latest, d.Status.UnstartedAttempts)
		if result.reason != "" {
			reason = cnatv1beta1.ReasonPodPending
			message = fmt.Sprintf("Pod %s of attempt %d is not running: %s", pod.Name, latest, result.reason)
			if result.message != "" {
				message += ": " + result.message
			}
		}
		setPhase(d.Status, w.at, now, cnatv1beta1.PhaseRunning, reason, message)
	case podRunning:
		setPhase(d.Status, w.at, now, cnatv1beta1.PhaseRunning, cnatv1beta1.ReasonRunning, w.runningMessage(latest, d.Status.UnstartedAttempts))
	case podStopping:
		why := "is being deleted"
		if result.reason != "" {
			why = "was disrupted (" + result.reason + ")"
		}
		setPhase(d.Status, w.at, now, cnatv1beta1.PhaseRunning, cnatv1beta1.ReasonPodStopping, fmt.Sprintf(
			"Pod %s of attempt %d %s, but node %s has not reported that it stopped: its command may still run, and nothing runs again until it has",
			pod.Name, latest, why, pod.Spec.NodeName))
	case podSucceeded:
		message := "The command exited 0"
		if result.message != "" {
			message += ": " + result.message
		}
		w.finish(d, now, cnatv1beta1.PhaseSucceeded, cnatv1beta1.ReasonCompleted, message, result)
	case podDeleted:
		w.finish(d, now, cnatv1beta1.PhaseFailed, cnatv1beta1.ReasonPodDeleted,
			fmt.Sprintf("Pod %s was deleted before it finished; it is not run again", pod.Name), result)
	case podDeletedUnseen:
		d.Confirm, d.ConfirmPods = true, true
		w.finish(d, now, cnatv1beta1.PhaseFailed, cnatv1beta1.ReasonPodDeleted, fmt.Sprintf(
			"Pod %s was deleted while cnat was not watching, and its kubelet reported its end (%s) only after it learned of the deletion: whether the command had ended before cannot be known, so it is not reported as Succeeded and not run again",
			pod.Name, describeEnd(result)), result)
	case podDisrupted, podFailed:
		w.failed(d, now, latest, pod, result, recordedRetry)
	}
}

// noteEarlierSpec says on the At when its Pod runs a spec other than the one
// the At shows: an edit of command or template that raced the firing (the
// API server admitted it before the Pod existed and stored it after the
// controller's read). The Pod runs what it was made from; the At says so.
func (w world) noteEarlierSpec(d *Decision, pod *corev1.Pod) {
	ran := pod.Annotations[cnatv1beta1.AnnotationSpecHash]
	generation := pod.Annotations[cnatv1beta1.AnnotationSpecGeneration]
	// The generation moves with every spec change: while it is the Pod's,
	// nothing changed, and the digest need not be computed on every look.
	if ran == "" || d.Status == nil || generation == strconv.FormatInt(w.at.Generation, 10) || ran == atpod.SpecHash(w.at) {
		return
	}
	d.Status.Message += fmt.Sprintf("; Pod %s runs the spec of generation %s: spec.command or spec.template changed since it was created",
		pod.Name, generation)
}

// unstartedBefore counts the attempts before latest that were disrupted
// before their command started. The status counts them up to the attempt it
// records; the Pods of the attempts since (kept by their tracking finalizer
// until a status that records a later attempt is written) add theirs.
func (w world) unstartedBefore(latest int32) int32 {
	n := w.at.Status.UnstartedAttempts
	for attempt := max(w.at.Status.Attempts, 1); attempt < latest; attempt++ {
		if p := w.mine[attempt]; p != nil && w.read(p).unstarted() {
			n++
		}
	}
	return n
}

// unstarted reports whether the Pod was disrupted before its command could
// start: its attempt does not count against backoffLimit.
func (r podResult) unstarted() bool {
	return r.state == podDisrupted && !r.started
}

// failed decides for an attempt that failed or was disrupted: retry it after
// its backoff if the backoff limit allows (an attempt disrupted before its
// command started does not count), hold the retry while the At is
// suspended, fail the At otherwise. The backoff counts from the moment the
// controller saw the failure (recorded as status.retryTime), on its own
// clock: the Pod's times are its node's.
func (w world) failed(d *Decision, now time.Time, attempt int32, pod *corev1.Pod, result podResult, recordedRetry *metav1.Time) {
	failure := describeFailure(pod.Name, result)
	limit := ptr.Deref(w.at.Spec.BackoffLimit, 0)
	failures := attempt - d.Status.UnstartedAttempts
	if result.unstarted() {
		failures--
		failure += "; its command had not started, so the attempt does not count against backoffLimit"
	}
	if failures > limit {
		reason := cnatv1beta1.ReasonError
		switch {
		case result.state == podDisrupted:
			reason = cnatv1beta1.ReasonDisrupted
		case result.reason == cnatv1beta1.ReasonDeadlineExceeded:
			reason = cnatv1beta1.ReasonDeadlineExceeded
		case limit > 0:
			reason = cnatv1beta1.ReasonBackoffLimitExceeded
		}
		if limit > 0 {
			failure = fmt.Sprintf("%s; no retry left after %d failed attempts", failure, failures)
		}
		w.finish(d, now, cnatv1beta1.PhaseFailed, reason, failure, result)
		return
	}
	d.Status.ExitCode = result.exitCode
	// The failed Pod keeps its finalizer until the next attempt's Pod
	// exists: until then it is what tells this attempt failed.
	retryAt := now.Add(scheduler.RetryDelay(max(failures, 1)))
	if recordedRetry != nil {
		retryAt = recordedRetry.Time
	}
	d.Status.RetryTime = timestamp(retryAt)
	retryAt = d.Status.RetryTime.Time
	next := fmt.Sprintf("attempt %d", attempt+1)
	switch {
	case ptr.Deref(w.at.Spec.Suspend, false):
		setPhase(d.Status, w.at, now, cnatv1beta1.PhaseRunning, cnatv1beta1.ReasonSuspended,
			fmt.Sprintf("%s; suspended: %s starts once the At is resumed", failure, next))
	case now.Before(retryAt):
		setPhase(d.Status, w.at, now, cnatv1beta1.PhaseRunning, cnatv1beta1.ReasonRetrying,
			fmt.Sprintf("%s; %s starts at %s", failure, next, retryAt.UTC().Format(time.RFC3339)))
		d.Until = retryAt
	default:
		w.start(d, now, attempt+1)
	}
}

// finish records a terminal phase, then finished decides what follows. The
// completion time is the controller's clock when it saw the end, the clock
// the TTL is counted on.
func (w world) finish(d *Decision, now time.Time, phase cnatv1beta1.Phase, reason, message string, result podResult) {
	if result.exitCode != nil {
		d.Status.ExitCode = result.exitCode
	}
	d.Status.RetryTime = nil
	d.Status.CompletionTime = timestamp(now)
	setPhase(d.Status, w.at, now, phase, reason, message)
	w.finished(d, now)
}

// finished decides for a finished At: every Pod it still tracks may go once
// the status is written, its conditions describe its current generation,
// and it is deleted once its TTL is up.
func (w world) finished(d *Decision, now time.Time) {
	d.Action = Nothing
	d.Attempt = 0
	d.Release = append([]*corev1.Pod(nil), w.others...)
	for _, p := range w.mine {
		if tracked(p) {
			d.Release = append(d.Release, p)
		}
	}
	// A finished At is what it is, whatever was edited since, and kstatus
	// reads a stale observedGeneration as "in progress".
	for i := range d.Status.Conditions {
		d.Status.Conditions[i].ObservedGeneration = w.at.Generation
	}
	ttl := w.at.Spec.TTLSecondsAfterFinished
	if ttl == nil || d.Status.CompletionTime == nil {
		return
	}
	expiry := d.Status.CompletionTime.Add(time.Duration(*ttl) * time.Second)
	if now.Before(expiry) {
		d.Until = expiry
		return
	}
	d.Action = DeleteAt
}

// runningMessage says which attempt runs, out of how many backoffLimit
// allows (attempts disrupted before they started add to those).
func (w world) runningMessage(attempt, unstarted int32) string {
	return fmt.Sprintf("Pod %s runs attempt %d of %d", atpod.PodName(w.at, attempt), attempt, ptr.Deref(w.at.Spec.BackoffLimit, 0)+1+unstarted)
}

// trackedPods are the pods that carry the tracking finalizer.
func trackedPods(pods []corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range pods {
		if tracked(&pods[i]) {
			out = append(out, &pods[i])
		}
	}
	return out
}
