package controller

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// TestUninstallOrderLeavesNoPodTerminating plays the README's uninstall
// with a run in flight: the Ats are deleted while the controller runs, the
// garbage collector deletes their Pods (envtest runs none: the test plays
// it), and the controller releases each Pod's tracking finalizer, so the
// Pod goes once its node has stopped it. Without the controller (cnat
// deleted first) the same Pod stays Terminating: the order matters.
func TestUninstallOrderLeavesNoPodTerminating(t *testing.T) {
	h := newHarness(t)
	for _, name := range []string{"in-flight", "orphaned"} {
		h.createAt(name, cnatv1beta1.AtSpec{Schedule: schedule(start), Command: "sleep 600"})
		h.reconcile(name)
		h.reconcile(name)
		h.runPod(h.podName(name, 1))
	}
	inFlight, orphaned := h.podName("in-flight", 1), h.podName("orphaned", 1)

	for _, name := range []string{"in-flight", "orphaned"} {
		h.g.Expect(apiClient.Delete(h.ctx, h.at(name))).To(Succeed()) // kubectl delete ats --all
	}
	for _, pod := range []string{inFlight, orphaned} {
		h.g.Expect(apiClient.Delete(h.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: h.ns}})).To(Succeed()) // the GC
	}
	h.reconcile("in-flight") // the controller still runs for this one
	h.finishPod(inFlight, 143)
	h.finishPod(orphaned, 143)
	h.removeStoppedPod(inFlight)
	h.removeStoppedPod(orphaned)

	h.g.Expect(h.pods("in-flight")).To(BeEmpty(), "released by the controller, then gone")
	stuck := h.pods("orphaned")
	h.g.Expect(stuck).To(HaveLen(1), "no controller: the Pod stays")
	h.g.Expect(stuck[0].DeletionTimestamp).NotTo(BeNil())
	h.g.Expect(stuck[0].Finalizers).To(ConsistOf(cnatv1beta1.TrackingFinalizer), "Terminating, held by the tracking finalizer")
}
