package lifecycle

import (
	"fmt"
	"strconv"
	"time"

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
	// podSucceeded: the command exited 0.
	podSucceeded
	// podFailed: the command, or the Pod, failed on its own.
	podFailed
	// podDeleted: the Pod was deleted before its command finished.
	podDeleted
)

// podResult is how a Pod stands, as the At reports it.
type podResult struct {
	state    podState
	exitCode *int32
	// reason is the Pod's or the container's reason, e.g. Error,
	// DeadlineExceeded, OOMKilled, or, while waiting, Unschedulable or
	// ErrImageNeverPull.
	reason  string
	message string
	// finishedAt is when the attempt ended, for a finished or deleted Pod:
	// never the time the controller happened to look (see finishedTime).
	finishedAt time.Time
}

// readPod reads where a Pod of cnat's stands.
//
// A Pod with a deletion timestamp counts as deleted before it finished,
// unless it succeeded (the command exited 0, whoever deleted it later) or
// it had failed on its own strictly before the deletion was requested, as
// when a janitor deletes finished Pods. A Pod killed because it was deleted
// also ends Failed; it must not be taken for a failure the At may retry.
func readPod(pod *corev1.Pod) podResult {
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
	if r.state == podSucceeded || r.state == podFailed {
		r.finishedAt = finishedTime(pod)
	}
	if pod.DeletionTimestamp != nil && r.state != podSucceeded {
		if r.state != podFailed || !r.finishedAt.Before(deletionRequested(pod)) {
			r.state = podDeleted
			r.finishedAt = deletionRequested(pod)
		}
	}
	return r
}

// deletionRequested is when the Pod's deletion was asked for: its deletion
// timestamp is that moment plus the grace period.
func deletionRequested(pod *corev1.Pod) time.Time {
	grace := time.Duration(ptr.Deref(pod.DeletionGracePeriodSeconds, 0)) * time.Second
	return pod.DeletionTimestamp.Add(-grace)
}

// finishedTime is when a finished Pod finished, read from the Pod alone, so
// that every reconcile reads the same instant: the latest finishedAt of its
// containers; else when it stopped being Ready; else its deletion timestamp;
// else its creation. The Job controller reads it the same way: a Pod that
// failed without a container finishing (rejected by the kubelet's admission,
// ContainerStatusUnknown, a deadline during the image pull, PodGC) still has
// one, fixed finishing time, and the retry after it is not pushed back on
// every look.
func finishedTime(pod *corev1.Pod) time.Time {
	var latest time.Time
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range statuses {
			if t := cs.State.Terminated; t != nil && t.FinishedAt.After(latest) {
				latest = t.FinishedAt.Time
			}
		}
	}
	if !latest.IsZero() {
		return latest
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	if pod.DeletionTimestamp != nil {
		return pod.DeletionTimestamp.Time
	}
	return pod.CreationTimestamp.Time
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
