package lifecycle_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/programming-kubernetes/cnat/internal/lifecycle"
)

// TestDeletedWhileRunning: what the controller's watch remembers — a Pod
// deleted with a grace period before it finished — and nothing else.
func TestDeletedWhileRunning(t *testing.T) {
	at := newAt()
	for name, tc := range map[string]struct {
		edits []func(*corev1.Pod)
		want  bool
	}{
		"running, deleted with its grace period":     {[]func(*corev1.Pod){running, deletedAt(t0)}, true},
		"running, not deleted":                       {[]func(*corev1.Pod){running}, false},
		"running, deleted at once (forced)":          {[]func(*corev1.Pod){running, deletedAt(t0), deletedAgainByKubelet}, false},
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

// TestMarkSeenDeletedWhileRunning: the mark is the controller's alone; a
// condition of that type on the API server's copy (anyone with pods/status
// may write one) is cleared.
func TestMarkSeenDeletedWhileRunning(t *testing.T) {
	g := NewWithT(t)
	pod := podOf(g, newAt(), 1, t0, running, deletedAt(t0), exited(137, t0.Add(time.Second)), deletedAgainByKubelet)
	forged := corev1.PodCondition{Type: lifecycle.SeenDeletedWhileRunning, Status: corev1.ConditionTrue}
	pod.Status.Conditions = append(pod.Status.Conditions, forged, forged)

	lifecycle.MarkSeenDeletedWhileRunning(&pod, false)
	g.Expect(pod.Status.Conditions).NotTo(ContainElement(HaveField("Type", lifecycle.SeenDeletedWhileRunning)))

	lifecycle.MarkSeenDeletedWhileRunning(&pod, true)
	g.Expect(pod.Status.Conditions).To(ConsistOf(HaveField("Type", lifecycle.SeenDeletedWhileRunning)))
}
