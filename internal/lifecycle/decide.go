// Package lifecycle is the life of an At as pure functions, no client, no
// clock: Decide takes the At, the Pods that carry its name and the time, and
// returns the status the At should have and the one thing to do next;
// Reconcile carries it out over Effects. The guarantees it keeps, which the
// model test checks, are listed in docs/architecture.md ("The life of an At").
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
	// Nothing: write the status, release what Release lists, look again at Until.
	Nothing Action = iota
	// CreatePod: create the Pod of Attempt, and nothing else: the Pod records
	// its attempt, and the decision made once it shows writes the status
	// (Status is what the At will then report; a refusal's is NotCreated).
	CreatePod
	// DeleteAt: write the status, release, then delete the At (its TTL is up).
	DeleteAt
)

// Decision is what Decide concluded.
type Decision struct {
	// Action is what to do.
	Action Action
	// Status is the status the At should have; nil when the At is gone or going.
	Status *cnatv1beta1.AtStatus
	// Attempt is, for CreatePod, the attempt whose Pod to create.
	Attempt int32
	// ScheduledTime is the instant the At is due.
	ScheduledTime time.Time
	// Release lists the Pods whose tracking finalizer may go once Status is written.
	Release []*corev1.Pod
	// Until is when to look again (schedule, backoff, TTL); zero for no timer.
	Until time.Time
	// Confirm asks Reconcile to read the At afresh and decide again before it
	// acts: the decision starts a Pod or takes another At (or none) for a
	// fact, which a lagging cache could show wrongly.
	Confirm bool
	// ConfirmPods also lists the Pods afresh: the decision takes a Pod's
	// absence for a fact.
	ConfirmPods bool
	// InvalidSpec: the spec cannot be acted on until it is edited.
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
		// The At is gone: its Pods are released, every one of its name read
		// afresh (one the cache does not show would stay Terminating for good).
		return Decision{Release: trackedPods(pods), Confirm: true, ConfirmPods: true}
	}
	if at.DeletionTimestamp != nil {
		return Decision{Release: trackedPods(pods)}
	}
	w := newWorld(at, pods)
	d := Decision{Status: at.Status.DeepCopy()}
	d.Status.ObservedGeneration = at.Generation
	if len(w.others) > 0 {
		// Pods of another incarnation (or nobody's) go, once confirmed.
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
	// From the spec every time: a status never written must not be needed.
	d.Status.ScheduledTime = timestamp(scheduled)

	if unmade := w.dropUnmade(now, scheduled); len(unmade) > 0 {
		// Not counted, not followed, and said.
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
		// A recorded attempt whose Pod is gone unrecorded (the finalizer
		// taken off by hand, or a lagging cache): never run again.
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

// read reads one of the At's Pods (readPod) with what the status recorded of
// it: reported stopping, it was interrupted whatever it reads now; reported
// failed, it had finished before any deletion.
func (w world) read(pod *corev1.Pod) podResult {
	st := w.at.Status
	recorded := st.PodName == pod.Name
	// A retry time is recorded only with the failure of the attempt before.
	return readPod(pod, recorded && st.Reason == cnatv1beta1.ReasonPodStopping, recorded && st.RetryTime != nil)
}

// dropUnmade takes out of w.mine, and returns, the Pods that claim an attempt
// the controller cannot have made: attempt 1 before the At's time, or one
// whose predecessor runs, succeeded or was never made.
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

// unmadeNote is what the At says of Pods that claim it but cnat did not make.
func unmadeNote(pods []*corev1.Pod) string {
	names := make([]string, 0, len(pods))
	for _, p := range pods {
		names = append(names, p.Name)
	}
	return fmt.Sprintf("; Pod %s claims this At but cnat did not make it: not counted", strings.Join(names, ", "))
}

// latestAttempt is the highest attempt this incarnation is known to have
// started, by its status or its own Pods, so a Pod not recorded yet counts
// and a recorded one that vanished is never started again.
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
		// Final, and resting on no Pod: one made before a crash may not show yet.
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
	// The recorded retry time is the recorded attempt's.
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
	// Earlier attempts' failures are accounted for: their Pods may go.
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
// it shows: an edit that raced the firing.
func (w world) noteEarlierSpec(d *Decision, pod *corev1.Pod) {
	ran := pod.Annotations[cnatv1beta1.AnnotationSpecHash]
	generation := pod.Annotations[cnatv1beta1.AnnotationSpecGeneration]
	// The same generation means the same spec: no digest to compute.
	if ran == "" || d.Status == nil || generation == strconv.FormatInt(w.at.Generation, 10) || ran == atpod.SpecHash(w.at) {
		return
	}
	d.Status.Message += fmt.Sprintf("; Pod %s runs the spec of generation %s: spec.command or spec.template changed since it was created",
		pod.Name, generation)
}

// unstartedBefore counts the attempts before latest disrupted before their
// command started: the status's count, plus the Pods of the attempts since.
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

// failed decides for an attempt that failed or was disrupted: retry after its
// backoff (counted on the controller's clock from status.retryTime) if the
// limit allows, hold the retry while suspended, or fail the At.
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
	// Kept until the next attempt's Pod exists: it tells this one failed.
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

// finish records a terminal phase, completed on the controller's clock (the
// TTL's), then finished decides what follows.
func (w world) finish(d *Decision, now time.Time, phase cnatv1beta1.Phase, reason, message string, result podResult) {
	if result.exitCode != nil {
		d.Status.ExitCode = result.exitCode
	}
	d.Status.RetryTime = nil
	d.Status.CompletionTime = timestamp(now)
	setPhase(d.Status, w.at, now, phase, reason, message)
	w.finished(d, now)
}

// finished decides for a finished At: its Pods go, its conditions describe
// its current generation, and it is deleted once its TTL is up.
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
