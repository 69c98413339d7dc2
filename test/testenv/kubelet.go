package testenv

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// envtest runs no kubelet: the suites play it by writing the status a kubelet
// would report. These build that status for a Pod's first container.

// RunningStatus is the status of pod whose command started at.
func RunningStatus(pod *corev1.Pod, at time.Time) corev1.PodStatus {
	started := metav1.NewTime(at)
	return corev1.PodStatus{
		Phase:     corev1.PodRunning,
		StartTime: &started,
		ContainerStatuses: []corev1.ContainerStatus{{
			Name:  pod.Spec.Containers[0].Name,
			Image: pod.Spec.Containers[0].Image,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
		}},
	}
}

// TerminatedStatus is the status of pod whose command exited with code at:
// Succeeded with reason Completed for 0, Failed with reason Error otherwise.
func TerminatedStatus(pod *corev1.Pod, code int32, at time.Time) corev1.PodStatus {
	phase, reason := corev1.PodSucceeded, "Completed"
	if code != 0 {
		phase, reason = corev1.PodFailed, "Error"
	}
	finished := metav1.NewTime(at)
	return corev1.PodStatus{
		Phase:     phase,
		StartTime: &finished,
		ContainerStatuses: []corev1.ContainerStatus{{
			Name:  pod.Spec.Containers[0].Name,
			Image: pod.Spec.Containers[0].Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: code, Reason: reason, StartedAt: finished, FinishedAt: finished,
			}},
		}},
	}
}
