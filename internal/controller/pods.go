package controller

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// podResult is how a finished Pod ended, as the At reports it.
type podResult struct {
	exitCode   *int32
	reason     string // the Pod's or the container's reason, e.g. Error, DeadlineExceeded, OOMKilled
	message    string
	finishedAt time.Time
}

// resultOf reads the outcome of a finished Pod: the exit code of its first
// container (the one that runs the command) or, if an init container
// failed, of that one; the reason and message; and when it finished.
func resultOf(pod *corev1.Pod) podResult {
	var r podResult
	if term := commandTermination(pod); term != nil {
		r.exitCode = ptr.To(term.ExitCode)
		r.reason = term.Reason
		r.message = term.Message
		r.finishedAt = term.FinishedAt.Time
	}
	if pod.Status.Reason != "" {
		// The kubelet's reason for the whole Pod, such as DeadlineExceeded
		// or Evicted, says more than the container's.
		r.reason = pod.Status.Reason
		r.message = pod.Status.Message
	}
	return r
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

// latestAttempt is the highest attempt known, from the status or from the
// Pods. The Pods win when the controller stopped between creating a Pod and
// recording it: the next reconcile adopts the Pod instead of starting
// another.
func latestAttempt(recorded int32, pods map[int32]*corev1.Pod) int32 {
	latest := recorded
	for attempt := range pods {
		latest = max(latest, attempt)
	}
	return latest
}
