package lifecycle

import (
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// podState is where one attempt's Pod is, as far as the At is concerned.
type podState int

const (
	// podWaiting: the Pod exists but its command has not started
	// (unscheduled, pulling its image, a container it cannot create).
	podWaiting podState = iota
	// podRunning: the command runs.
	podRunning
	// podStopping: the Pod is being deleted, or was disrupted, while a
	// kubelet may still run its command: nothing is decided until its node
	// says it stopped (or the Pod is gone).
	podStopping
	// podSucceeded: the command exited 0, and nothing interrupted it.
	podSucceeded
	// podFailed: the command, or the Pod, failed on its own.
	podFailed
	// podDeleted: the Pod was deleted before it finished, by a user or a
	// janitor (no disruption condition): the At does not run it again.
	podDeleted
	// podDisrupted: the Pod was disrupted (its DisruptionTarget condition)
	// before it finished: an eviction, a drain, a preemption, a taint, the
	// loss of its node.
	podDisrupted
)

// podResult is how a Pod stands, as the At reports it.
type podResult struct {
	state    podState
	exitCode *int32
	// reason is the Pod's or the container's reason, e.g. Error,
	// DeadlineExceeded, OOMKilled, or, while waiting, Unschedulable or
	// ErrImageNeverPull; for a disrupted Pod, the DisruptionTarget
	// condition's reason (EvictionByEvictionAPI, PreemptionByScheduler...).
	reason  string
	message string
	// started is whether the command may have started. Only a Pod whose
	// command certainly never started is retried without counting against
	// backoffLimit.
	started bool
	// deletedAtOnce is set for a Pod deleted with a grace period of 0 that
	// no one saw deleted with one: a forced deletion, or the deletion of a
	// Pod not yet scheduled, finished, or disrupted. Its kubelet's report
	// decides how its attempt ended.
	deletedAtOnce bool
}

// readPod reads where a Pod of cnat's stands. It compares no timestamps:
// the Pod's times come from its node's clock, its deletion's from the API
// server's, and the two may differ by any amount. What it reads instead is
// what the API server decided when the Pod was deleted, and the conditions
// it and the kubelet set:
//
//   - The API server deletes a Pod that has finished (or was never
//     scheduled) at once, with a grace period of 0, and gives a Pod that
//     runs its termination grace period. So a Pod deleted with a grace
//     period was running when it was deleted: whatever it exits with
//     afterwards (a command may exit 0 on SIGTERM), it was interrupted, never
//     Succeeded. A Pod deleted at once keeps its own outcome (a janitor
//     deleting finished Pods; a forced deletion of a running Pod reads as
//     its kill, a failure).
//   - A Pod with the DisruptionTarget condition was disrupted (the API
//     server's eviction, the scheduler's preemption, the taint manager,
//     PodGC, the kubelet's own evictions): never Succeeded either.
//   - An interrupted Pod that is still on a node and not yet Failed or
//     Succeeded may still run its command (a node cut off from the API
//     server keeps running it): podStopping, until its node reports it
//     stopped or the Pod is gone.
//   - Once a Pod deleted with a grace period has stopped, its kubelet deletes
//     it again with a grace period of 0, and the API server stores that:
//     from then on the Pod reads like a finished Pod deleted at once. So
//     the graceful deletion must have been seen before: seenStopping says
//     it was (the controller watched the Pod while it was being deleted
//     and not yet finished, or the At's status recorded it as PodStopping).
func readPod(pod *corev1.Pod, seenStopping bool) podResult {
	r := podResult{state: podWaiting}
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
	seen := seenStopping && disruption == nil || seenDeletedWhileRunning(pod)
	deletedAtOnce := deleted && ptr.Deref(pod.DeletionGracePeriodSeconds, 0) == 0 && !seen
	if disruption != nil && disruption.Reason == podGCReason && deleted && !deletedAtOnce {
		// PodGC deletes at once; a Pod it found deleted with a grace period
		// (its node gone since) was deleted by someone else first, and that
		// deletion is what the At reports.
		disruption = nil
	}
	switch {
	case (!deleted || deletedAtOnce && terminal) && disruption == nil:
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
	default:
		r.state = podDeleted
	}
	r.started = mayHaveStarted(pod, disruption)
	r.deletedAtOnce = deletedAtOnce
	return r
}

// SeenDeletedWhileRunning is the type of a Pod condition that never reaches
// the API server: the controller adds it to its in-memory copy of a Pod it
// watched being deleted with a grace period before the Pod finished (the
// watch delivers every change in order; a reconcile reads only the latest,
// which after the kubelet's final deletion no longer shows the grace
// period). MarkSeenDeletedWhileRunning sets it.
const SeenDeletedWhileRunning corev1.PodConditionType = "cnat.programming-kubernetes.info/SeenDeletedWhileRunning"

// DeletedWhileRunning reports whether the Pod, as it stands, is being
// deleted with a grace period before it finished: its command was running,
// or about to, when it was deleted.
func DeletedWhileRunning(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp != nil && ptr.Deref(pod.DeletionGracePeriodSeconds, 0) > 0 &&
		pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// MarkSeenDeletedWhileRunning sets, or clears, the SeenDeletedWhileRunning
// condition on an in-memory copy of a Pod. It always clears what the API
// server's copy may carry: only the controller's own watch says so.
func MarkSeenDeletedWhileRunning(pod *corev1.Pod, seen bool) {
	pod.Status.Conditions = slices.DeleteFunc(pod.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == SeenDeletedWhileRunning
	})
	if seen {
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: SeenDeletedWhileRunning, Status: corev1.ConditionTrue})
	}
}

func seenDeletedWhileRunning(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == SeenDeletedWhileRunning && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// podGCReason is the DisruptionTarget reason of PodGC, which marks Failed
// the Pods of a node that is gone: their kubelet never had the last word.
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

// mayHaveStarted reports whether the Pod's command (or anything of its
// template: an init container) may have started. It says no only when that
// is certain: the Pod was never scheduled, or its kubelet reported it
// finished without ever having acknowledged it (no status.startTime, which
// the kubelet sets before it pulls an image or starts a container: a Pod it
// refused at admission) and with no container started. A Pod the kubelet
// acknowledged may have run, whatever its containers show now: a container
// the kubelet lost after it ran is reported terminated with exit code 137
// and no start time (ContainerStatusUnknown), exactly like one that never
// started. A Pod that PodGC marked Failed (its node is gone) is not certain
// either: its kubelet never had the last word.
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

// waitingReason says why a Pending Pod's command has not started: the
// scheduler's reason when it is not scheduled, else the first waiting
// container's reason other than the routine ContainerCreating and
// PodInitializing. Empty when nothing is wrong yet.
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

// attemptOf reads the attempt number a Pod of cnat's runs.
func attemptOf(pod *corev1.Pod) (int32, bool) {
	n, err := strconv.ParseInt(pod.Labels[cnatv1beta1.LabelAttempt], 10, 32)
	if err != nil || n < 1 {
		return 0, false
	}
	return int32(n), true
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
