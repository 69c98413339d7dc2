package lifecycle

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// podState is where one attempt's Pod is, as far as the At is concerned.
type podState int

const (
	// podWaiting: the Pod exists but its command has not started.
	podWaiting podState = iota
	// podRunning: the command runs.
	podRunning
	// podStopping: deleted or disrupted while a kubelet may still run it:
	// nothing is decided until its node says it stopped (or it is gone).
	podStopping
	// podSucceeded: the command exited 0, and nothing interrupted it.
	podSucceeded
	// podFailed: the command, or the Pod, failed on its own.
	podFailed
	// podDeleted: deleted before it finished (no disruption): not run again.
	podDeleted
	// podDisrupted: disrupted (DisruptionTarget) before it finished.
	podDisrupted
	// podDeletedUnseen: finished and deleted unwatched, its end reported
	// after the deletion: maybe interrupted, neither Succeeded nor run again.
	podDeletedUnseen
)

// podResult is how a Pod stands, as the At reports it.
type podResult struct {
	state    podState
	exitCode *int32
	// reason is the Pod's, the container's or the DisruptionTarget's reason.
	reason  string
	message string
	// started is whether the command may have started (if not, a retry does
	// not count against backoffLimit).
	started bool
	// restarts counts the command container's restarts: its command reran.
	restarts int32
}

// readPod reads where a Pod of cnat's stands, comparing no timestamp of its
// node with the API server's, by the rules of the README's "How an attempt
// ends"; seenStopping and seenFinished are what the At's status recorded.
func readPod(pod *corev1.Pod, seenStopping, seenFinished bool) podResult {
	r := podResult{state: podWaiting, restarts: commandRestarts(pod)}
	if term := commandTermination(pod); term != nil {
		r.exitCode = ptr.To(term.ExitCode)
		r.reason = term.Reason
		r.message = term.Message
	}
	if pod.Status.Reason != "" {
		// The kubelet's reason for the whole Pod, such as DeadlineExceeded
		// or Evicted, says more than the container's.
		r.reason = pod.Status.Reason
		r.message = pod.Status.Message
	}
	terminal := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	disruption := disruptionTarget(pod)
	deleted := pod.DeletionTimestamp != nil
	// A disrupted Pod carries its condition for good; what the status
	// recorded as stopping is then its disruption, not a deletion.
	seen := seenStopping && disruption == nil || hasCondition(pod, SeenDeletedWhileRunning)
	deletedAtOnce := deleted && ptr.Deref(pod.DeletionGracePeriodSeconds, 0) == 0 && !seen
	before, known := reportedBeforeDeletion(pod)
	if disruption != nil && disruption.Reason != podGCReason && terminal && deleted && known && before {
		// The end reported before the deletion that came with the
		// disruption: the disruption came after the run.
		disruption = nil
	}
	if disruption != nil && disruption.Reason == podGCReason && deleted && !deletedAtOnce {
		// PodGC deletes at once: a grace period was someone else's deletion.
		disruption = nil
	}
	// Where the kubelet reports no generation, a finished Pod deleted unseen
	// keeps its own outcome (docs/reliability.md, what cannot be known).
	seenFinished = seenFinished || hasCondition(pod, SeenFinished) || before || !known
	switch {
	case (!deleted || deletedAtOnce && terminal && seenFinished) && disruption == nil:
		// Not interrupted: its phase is its outcome.
		switch pod.Status.Phase {
		case corev1.PodSucceeded:
			r.state = podSucceeded
		case corev1.PodFailed:
			r.state = podFailed
		case corev1.PodRunning:
			r.state = podRunning
		default:
			r.reason, r.message = waitingReason(pod)
		}
	case !terminal && pod.Spec.NodeName != "":
		r.state = podStopping
		if disruption != nil {
			r.reason, r.message = disruption.Reason, disruption.Message
		}
	case disruption != nil:
		r.state = podDisrupted
		r.reason, r.message = disruption.Reason, disruption.Message
	case deletedAtOnce && terminal:
		r.state = podDeletedUnseen
	default:
		r.state = podDeleted
	}
	r.started = mayHaveStarted(pod, disruption)
	return r
}

// SeenDeletedWhileRunning is an in-memory Pod condition, never sent: the
// controller's watch saw the Pod deleted before it finished, which its latest
// state may no longer show. MarkSeen sets it.
const SeenDeletedWhileRunning corev1.PodConditionType = "cnat.programming-kubernetes.info/SeenDeletedWhileRunning"

// SeenFinished is an in-memory Pod condition: the watch saw the Pod finished
// before any deletion. MarkSeen sets it.
const SeenFinished corev1.PodConditionType = "cnat.programming-kubernetes.info/SeenFinished"

// DeletedWhileRunning reports whether the Pod is being deleted, with any grace
// period, while bound and not finished.
func DeletedWhileRunning(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp != nil && pod.Spec.NodeName != "" &&
		pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// FinishedUndeleted reports whether the Pod, as it stands, has finished and
// is not being deleted.
func FinishedUndeleted(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp == nil && (pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed)
}

// FinishedCleanly reports whether the Pod has finished with neither a
// disruption nor a deletion while it ran.
func FinishedCleanly(pod *corev1.Pod) bool {
	terminal := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	return terminal && !Disrupted(pod) && !DeletedWhileRunning(pod) &&
		(pod.DeletionTimestamp == nil || ptr.Deref(pod.DeletionGracePeriodSeconds, 0) == 0)
}

// Disrupted reports whether the Pod carries a True DisruptionTarget
// condition.
func Disrupted(pod *corev1.Pod) bool { return disruptionTarget(pod) != nil }

// MarkSeen sets, or clears, SeenDeletedWhileRunning and SeenFinished on a copy
// of a Pod; only the controller's own watch says so.
func MarkSeen(pod *corev1.Pod, deletedWhileRunning, finished bool) {
	pod.Status.Conditions = slices.DeleteFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == SeenDeletedWhileRunning || c.Type == SeenFinished
	})
	if deletedWhileRunning {
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: SeenDeletedWhileRunning, Status: corev1.ConditionTrue})
	}
	if finished {
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: SeenFinished, Status: corev1.ConditionTrue})
	}
}

func hasCondition(pod *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// podGCReason is the DisruptionTarget reason of PodGC (the Pod's node is gone).
const podGCReason = "DeletionByPodGC"

// disruptionTarget is the Pod's DisruptionTarget condition, if it is True.
func disruptionTarget(pod *corev1.Pod) *corev1.PodCondition {
	for i, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// mayHaveStarted reports whether anything of the Pod may have started. It says
// no only when certain: never scheduled, or finished without its kubelet ever
// acknowledging it (status.startTime) and no container started; never for PodGC's.
func mayHaveStarted(pod *corev1.Pod, disruption *corev1.PodCondition) bool {
	if pod.Spec.NodeName == "" {
		return false
	}
	if pod.Status.Phase == corev1.PodRunning || pod.Status.Phase == corev1.PodSucceeded || pod.Status.StartTime != nil {
		return true
	}
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range statuses {
			for _, state := range []corev1.ContainerState{cs.State, cs.LastTerminationState} {
				if state.Running != nil || state.Terminated != nil && !state.Terminated.StartedAt.IsZero() {
					return true
				}
			}
		}
	}
	byKubelet := pod.Status.Phase == corev1.PodFailed && (disruption == nil || disruption.Reason != podGCReason)
	return !byKubelet
}

// reportedBeforeDeletion says whether the kubelet reported the Pod's end before
// it learned of the deletion (status.observedGeneration older than the
// deletion's); known is false where the kubelet reports no generation.
func reportedBeforeDeletion(pod *corev1.Pod) (before, known bool) {
	observed := pod.Status.ObservedGeneration
	if observed == 0 {
		return false, false
	}
	return observed < pod.Generation, true
}

// commandRestarts is how often the first container restarted: with
// restartPolicy Never only after someone changed the running Pod.
func commandRestarts(pod *corev1.Pod) int32 {
	for _, cs := range pod.Status.ContainerStatuses {
		if len(pod.Spec.Containers) > 0 && cs.Name == pod.Spec.Containers[0].Name {
			return cs.RestartCount
		}
	}
	return 0
}

// commandTermination is the terminated state that decides the Pod's
// outcome: a failed init container's, else the first container's.
func commandTermination(pod *corev1.Pod) *corev1.ContainerStateTerminated {
	for _, cs := range pod.Status.InitContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			return t
		}
	}
	if len(pod.Spec.Containers) == 0 {
		return nil
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == pod.Spec.Containers[0].Name {
			return cs.State.Terminated
		}
	}
	return nil
}

// waitingReason says why a Pending Pod's command has not started (the
// scheduler's or a container's unusual reason), empty when nothing is wrong.
func waitingReason(pod *corev1.Pod) (reason, message string) {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return c.Reason, c.Message
		}
	}
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range statuses {
			w := cs.State.Waiting
			if w == nil || w.Reason == "" || w.Reason == "ContainerCreating" || w.Reason == "PodInitializing" {
				continue
			}
			return w.Reason, w.Message
		}
	}
	return "", ""
}

// describeEnd says how a finished Pod's command ended.
func describeEnd(r podResult) string {
	if r.exitCode == nil {
		return "no exit code"
	}
	return fmt.Sprintf("exit code %d", *r.exitCode)
}

// describeFailure is the message of a failed attempt.
func describeFailure(podName string, r podResult) string {
	msg := fmt.Sprintf("Pod %s failed", podName)
	if r.exitCode != nil {
		msg = fmt.Sprintf("Pod %s failed with exit code %d", podName, *r.exitCode)
	}
	if r.reason != "" {
		msg += " (" + r.reason + ")"
	}
	if r.message != "" {
		msg += ": " + r.message
	}
	return msg
}

// tracked reports whether the Pod still carries cnat's tracking finalizer.
func tracked(pod *corev1.Pod) bool {
	for _, f := range pod.Finalizers {
		if f == cnatv1beta1.TrackingFinalizer {
			return true
		}
	}
	return false
}
