package controller

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/atpod"
	"github.com/programming-kubernetes/cnat/internal/lifecycle"
)

// TestTrimmedPodsDecideAsWhole: the cache keeps less of a Pod (trimPod), and
// every decision made on the Pods it keeps is the decision made on the whole
// Pods, for a Pod in each state a reconcile meets.
func TestTrimmedPodsDecideAsWhole(t *testing.T) {
	now := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	at := &cnatv1beta1.At{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", UID: types.UID("0123456789"), Generation: 1},
		Spec: cnatv1beta1.AtSpec{Schedule: now.Add(-time.Minute).Format(time.RFC3339), Command: "echo hi", BackoffLimit: ptr.To[int32](2),
			Template: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "main", Image: "busybox:1.37", Env: []corev1.EnvVar{{Name: "X", Value: "y"}}}},
				Volumes:    []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			}}},
	}
	at.Status = cnatv1beta1.AtStatus{Phase: cnatv1beta1.PhaseRunning, Attempts: 1, ObservedGeneration: 1,
		ScheduledTime: &metav1.Time{Time: now.Add(-time.Minute)}}
	base := atpod.NewPod(at, 1, now.Add(-time.Minute), atpod.PodOptions{DefaultImage: "busybox:1.37"})
	base.UID, base.CreationTimestamp = "pod-uid", metav1.Time{Time: now.Add(-50 * time.Second)}
	base.Annotations = map[string]string{"example.com/other": "x", cnatv1beta1.AnnotationSpecHash: base.Annotations[cnatv1beta1.AnnotationSpecHash]}
	base.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}

	terminated := func(code int32, reason string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: "main", Image: "busybox:1.37", ImageID: "sha256:abc", ContainerID: "containerd://1",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason}}}
	}
	// The conditions of a Pod that ran, which say nothing a reconcile reads.
	ran := func(ready corev1.ConditionStatus) []corev1.PodCondition {
		var cs []corev1.PodCondition
		for _, t := range []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled} {
			status := corev1.ConditionTrue
			if t == corev1.PodReady || t == corev1.ContainersReady {
				status = ready
			}
			cs = append(cs, corev1.PodCondition{Type: t, Status: status, Reason: "PodCompleted", LastTransitionTime: metav1.Time{Time: now}})
		}
		return cs
	}
	pods := map[string]func(p *corev1.Pod){
		"pending": func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending },
		"unschedulable": func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available"}}
		},
		"waiting on its node": func(p *corev1.Pod) {
			p.Spec.NodeName, p.Status.Phase = "node-1", corev1.PodPending
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "no such image"}}}}
		},
		"running": func(p *corev1.Pod) {
			p.Spec.NodeName, p.Status.Phase, p.Status.StartTime = "node-1", corev1.PodRunning, &metav1.Time{Time: now.Add(-40 * time.Second)}
			p.Status.PodIP, p.Status.HostIP = "10.0.0.2", "10.0.0.1"
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: "busybox:1.37", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		},
		"succeeded": func(p *corev1.Pod) {
			p.Spec.NodeName, p.Status.Phase, p.Status.Conditions = "node-1", corev1.PodSucceeded, ran(corev1.ConditionFalse)
			p.Status.ContainerStatuses = []corev1.ContainerStatus{terminated(0, "Completed")}
		},
		"succeeded beside a sidecar": func(p *corev1.Pod) {
			p.Spec.NodeName, p.Status.Phase, p.Status.Conditions = "node-1", corev1.PodSucceeded, ran(corev1.ConditionFalse)
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "sidecar", Image: "busybox:1.37"})
			sidecar := terminated(2, "Error")
			sidecar.Name = "sidecar"
			p.Status.ContainerStatuses = []corev1.ContainerStatus{sidecar, terminated(0, "Completed")}
		},
		"failed": func(p *corev1.Pod) {
			p.Spec.NodeName, p.Status.Phase = "node-1", corev1.PodFailed
			p.Status.ContainerStatuses = []corev1.ContainerStatus{terminated(3, "Error")}
		},
		"deleted while running": func(p *corev1.Pod) {
			p.Spec.NodeName, p.Status.Phase = "node-1", corev1.PodRunning
			p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &metav1.Time{Time: now}, ptr.To[int64](30)
		},
		"disrupted": func(p *corev1.Pod) {
			p.Spec.NodeName, p.Status.Phase = "node-1", corev1.PodFailed
			p.Status.Conditions = append(ran(corev1.ConditionFalse), corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI"})
			p.Status.ContainerStatuses = []corev1.ContainerStatus{terminated(137, "Error")}
		},
		"ran an earlier spec": func(p *corev1.Pod) {
			p.Annotations[cnatv1beta1.AnnotationSpecHash] = "another"
			p.Spec.NodeName, p.Status.Phase = "node-1", corev1.PodSucceeded
			p.Status.ContainerStatuses = []corev1.ContainerStatus{terminated(0, "Completed")}
		},
	}
	for name, set := range pods {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			whole := base.DeepCopy()
			set(whole)
			trimmed, err := trimPod(whole.DeepCopy())
			g.Expect(err).NotTo(HaveOccurred())
			kept := trimmed.(*corev1.Pod)
			g.Expect(kept.Spec.Volumes).To(BeEmpty(), "trimmed")
			g.Expect(kept.Spec.Containers).To(HaveLen(1), "the command's container only")
			for _, c := range kept.Status.Conditions {
				g.Expect(c.Type == corev1.DisruptionTarget || c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse).To(BeTrue(), "condition %s kept", c.Type)
			}
			got, want := lifecycle.Decide(at, []corev1.Pod{*trimmed.(*corev1.Pod)}, now), lifecycle.Decide(at, []corev1.Pod{*whole}, now)
			// The Pods a decision releases are compared by identity: the
			// release patches the Pod by its UID.
			samePod := cmp.Comparer(func(a, b corev1.Pod) bool { return a.Name == b.Name && a.UID == b.UID })
			g.Expect(cmp.Diff(want, got, cmpopts.EquateEmpty(), samePod)).To(BeEmpty())
		})
	}
}
