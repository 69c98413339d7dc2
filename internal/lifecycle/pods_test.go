package lifecycle_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/programming-kubernetes/cnat/internal/lifecycle"
)

// TestDeletedWhileRunning: what the controller's watch remembers — a Pod
// deleted while bound and not finished, with any grace period (a forced
// deletion too) — and nothing else.
func TestDeletedWhileRunning(t *testing.T) {
	at := newAt()
	for name, tc := range map[string]struct {
		edits []func(*corev1.Pod)
		want  bool
	}{
		"running, deleted with its grace period":     {[]func(*corev1.Pod){running, deletedAt(t0)}, true},
		"running, not deleted":                       {[]func(*corev1.Pod){running}, false},
		"running, deleted at once (forced)":          {[]func(*corev1.Pod){running, deletedAt(t0), deletedAgainByKubelet}, true},
		"failed, then deleted (a janitor)":           {[]func(*corev1.Pod){exited(1, t0), deletedAt(t0)}, false},
		"killed after its deletion, grace not yet 0": {[]func(*corev1.Pod){running, deletedAt(t0), exited(137, t0.Add(time.Second))}, false},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			pod := podOf(g, at, 1, t0, tc.edits...)
			g.Expect(lifecycle.DeletedWhileRunning(&pod)).To(Equal(tc.want))
		})
	}
}

// TestMarkSeen: the marks are the controller's alone; a condition of their
// types on the API server's copy (anyone with pods/status may write one) is
// cleared.
func TestMarkSeen(t *testing.T) {
	g := NewWithT(t)
	pod := podOf(g, newAt(), 1, t0, running, deletedAt(t0), exited(137, t0.Add(time.Second)), deletedAgainByKubelet)
	for _, forged := range []corev1.PodConditionType{lifecycle.SeenDeletedWhileRunning, lifecycle.SeenFinished} {
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: forged, Status: corev1.ConditionTrue})
	}

	lifecycle.MarkSeen(&pod, false, false)
	g.Expect(pod.Status.Conditions).NotTo(ContainElement(HaveField("Type", lifecycle.SeenDeletedWhileRunning)))
	g.Expect(pod.Status.Conditions).NotTo(ContainElement(HaveField("Type", lifecycle.SeenFinished)))

	lifecycle.MarkSeen(&pod, true, false)
	g.Expect(pod.Status.Conditions).To(ConsistOf(HaveField("Type", lifecycle.SeenDeletedWhileRunning)))
	lifecycle.MarkSeen(&pod, false, true)
	g.Expect(pod.Status.Conditions).To(ConsistOf(HaveField("Type", lifecycle.SeenFinished)))
}
