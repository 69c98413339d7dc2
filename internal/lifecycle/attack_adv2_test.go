package lifecycle_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/lifecycle"
)

// TestAttackEvictionOfAFinishedPodRunsItAgain: a co-tenant (create
// pods/eviction) evicts an At's Pod that Succeeded long ago, while the
// controller is down (an upgrade, a crash loop). The eviction API skips the
// PDB for a terminal Pod, adds DisruptionTarget (EvictionByEvictionAPI) and
// deletes it (at once: it is finished), which gives the Pod a new
// generation. Its kubelet's report, status.observedGeneration 1, is older
// than generation 2: the kubelet reported the exit 0 before the deletion —
// exactly the evidence readPod trusts for a janitor's deletion
// (reportedBeforeDeletion). But readPod looks at the disruption first, and
// the At, with backoff left, makes attempt 2: a run that ended is run again,
// on a co-tenant's request. The README's carve-out ("only if the controller
// was down meanwhile does the disruption count") describes a scheduler race;
// here the co-tenant chooses the timing, and the API server's own record
// says the run had ended before the eviction.
func TestAttackEvictionOfAFinishedPodRunsItAgain(t *testing.T) {
	g := NewWithT(t)
	at := newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(3))
	pod := podOf(g, at, 1, t0, exitedOnNode(0, t0.Add(time.Minute)), reportedAt(2, 1),
		disrupted("EvictionByEvictionAPI"), deletedAt(t0.Add(time.Hour)))
	g.Expect(pod.Status.Phase).To(Equal(corev1.PodSucceeded))
	g.Expect(*pod.DeletionGracePeriodSeconds).To(BeZero(), "a finished Pod is deleted at once")

	d := lifecycle.Decide(at, []corev1.Pod{pod}, t0.Add(time.Hour+time.Minute))
	o := outcomeOf(d)
	g.Expect(o.Phase).To(Equal(cnatv1beta1.PhaseSucceeded), "its kubelet reported exit 0 before the eviction's deletion; got %+v, status message %q", o, d.Status.Message)
	g.Expect(d.Status.RetryTime).To(BeNil(), "the run ended: no retry of it is ever scheduled")
}
