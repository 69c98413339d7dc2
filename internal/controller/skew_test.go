package controller

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/test/testenv"
)

// TestNodeClockSkewDoesNotMoveTheRetry: a node whose clock is an hour
// ahead, or an hour behind, reports the failed attempt's times on its
// clock. The retry comes after the backoff counted on the controller's
// clock from when it saw the failure: not an hour late, not at once.
func TestNodeClockSkewDoesNotMoveTheRetry(t *testing.T) {
	for name, skew := range map[string]time.Duration{"ahead": time.Hour, "behind": -time.Hour} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.createAt("skewed", cnatv1beta1.AtSpec{Schedule: schedule(start), Command: "exit 3", BackoffLimit: ptr.To[int32](1)})
			h.reconcile("skewed")
			first := h.podName("skewed", 1)
			pod := h.bindPod(first)
			pod.Status = testenv.TerminatedStatus(pod, 3, h.clock.Now().Add(skew))
			h.g.Expect(apiClient.Status().Update(h.ctx, pod)).To(Succeed())

			h.reconcile("skewed")
			at := h.at("skewed")
			h.g.Expect(at.Status.Reason).To(Equal(cnatv1beta1.ReasonRetrying))
			h.g.Expect(at.Status.RetryTime).NotTo(BeNil())
			h.g.Expect(at.Status.RetryTime.Time).To(BeTemporally("==", h.clock.Now().Add(10*time.Second).Truncate(time.Second)))

			h.clock.Step(9 * time.Second)
			h.reconcile("skewed")
			h.g.Expect(h.pods("skewed")).To(HaveLen(1), "not before the backoff")
			h.clock.Step(time.Second)
			h.reconcile("skewed")
			h.g.Expect(h.pods("skewed")).To(HaveLen(2), "the retry after 10 s on the controller's clock")
		})
	}
}

// TestEditThatRacedTheFiringIsTold: the command is changed after the
// controller read the At but before the status records the firing (the
// window no CEL rule sees without the webhooks). The Pod runs the command
// it was made from; the At says that its Pod runs an earlier spec.
func TestEditThatRacedTheFiringIsTold(t *testing.T) {
	h := newHarness(t)
	h.createAt("raced", cnatv1beta1.AtSpec{Schedule: schedule(start), Command: "echo before"})
	h.reconcile("raced") // creates the Pod; the status does not record it yet
	at := h.at("raced")
	h.g.Expect(at.Status.Attempts).To(BeZero())
	at.Spec.Command = "echo after"
	h.g.Expect(apiClient.Update(h.ctx, at)).To(Succeed(), "CEL sees no attempt yet")

	h.reconcile("raced")
	at = h.at("raced")
	h.g.Expect(at.Status.Phase).To(Equal(cnatv1beta1.PhaseRunning))
	h.g.Expect(at.Status.Message).To(ContainSubstring("runs the spec of generation 1: spec.command or spec.template changed since it was created"))
	h.g.Expect(h.pod(h.podName("raced", 1)).Spec.Containers[0].Command).To(Equal([]string{"/bin/sh", "-c", "echo before"}))
}
