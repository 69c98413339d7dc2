package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/test/testenv"
)

// TestAttackStrippedPodLeaksFinalizerAcrossRestart: createPod releases a Pod
// that mutating admission stored without cnat's claims only on the path
// where its own Create succeeded. If that release does not happen — the
// controller restarts between the Create and the release, or the release
// patch fails once (a conflict, a timeout) — every later reconcile takes the
// AlreadyExists path, where notTheRun reports the Pod but nothing releases
// it. The cache never shows a claim-stripped Pod, so nothing else will:
// the Pod keeps cnat's tracking finalizer forever ("no Pod left with cnat's
// tracking finalizer" is broken; a deletion of it hangs in Terminating).
func TestAttackStrippedPodLeaksFinalizerAcrossRestart(t *testing.T) {
	h := newHarness(t)
	strip := func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if pod, isPod := obj.(*corev1.Pod); isPod {
			pod.Labels = map[string]string{"mutated": "true"}
		}
		return c.Create(ctx, obj, opts...)
	}
	// First controller: the Create goes through, the release that follows
	// never reaches the API server (the process dies, or the patch fails).
	h.r = h.newReconciler(interceptor.Funcs{
		Create: strip,
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, isPod := obj.(*corev1.Pod); isPod {
				return errors.New("connection reset: controller restarted before the release")
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	h.createAt("stripped", cnatv1beta1.AtSpec{Schedule: schedule(start), Command: "echo"})
	h.g.Expect(h.reconcileErr("stripped")).To(HaveOccurred())

	// The restarted controller, with a working client, reconciles again and again.
	h.r = h.newReconciler(interceptor.Funcs{Create: strip})
	for range 3 {
		_ = h.reconcileErr("stripped")
	}
	var pods corev1.PodList
	h.g.Expect(apiClient.List(h.ctx, &pods, client.InNamespace(h.ns))).To(Succeed())
	h.g.Expect(pods.Items).To(HaveLen(1))
	h.g.Expect(pods.Items[0].Finalizers).NotTo(ContainElement(cnatv1beta1.TrackingFinalizer),
		"released after the restart: nothing else will ever release a Pod the cache cannot see")
}

// TestAttackEvictionOfAFinishedPodRunsItAgainEnvtest: the API server's side
// of TestAttackEvictionOfAFinishedPodRunsItAgain (internal/lifecycle). An
// At's Pod ran and exited 0; its kubelet reported that with
// status.observedGeneration equal to the Pod's generation. The controller
// did not see the end (it restarted: its watch's history is gone). A
// co-tenant then evicts the long-finished Pod (pods/eviction, create: no
// PDB is consulted for a terminal Pod). The API server adds DisruptionTarget
// (EvictionByEvictionAPI), deletes the Pod at once and gives it a new
// generation, so observedGeneration < generation records that the exit 0
// came before the eviction. The restarted controller reads a disruption,
// and with backoff left it makes attempt 2: "a run that ended is not run
// again" is broken, at a co-tenant's choice of time.
func TestAttackEvictionOfAFinishedPodRunsItAgainEnvtest(t *testing.T) {
	h := newHarness(t)
	podName := h.runningAt("evicted")
	// Its kubelet: exit 0, reported knowing the Pod's current generation.
	pod := h.bindPod(podName)
	pod.Status = testenv.TerminatedStatus(pod, 0, h.clock.Now())
	pod.Status.ObservedGeneration = pod.Generation
	h.g.Expect(apiClient.Status().Update(h.ctx, pod)).To(Succeed())
	finishedGen := h.pod(podName).Generation

	// The co-tenant, while cnat is down.
	eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: podName, Namespace: h.ns}}
	h.g.Expect(apiClient.SubResource("eviction").Create(h.ctx, h.pod(podName), eviction)).To(Succeed())
	evicted := h.pod(podName)
	t.Logf("after the eviction: phase %s, generation %d (was %d), observedGeneration %d, deletionGracePeriodSeconds %v, conditions %v",
		evicted.Status.Phase, evicted.Generation, finishedGen, evicted.Status.ObservedGeneration,
		ptr.Deref(evicted.DeletionGracePeriodSeconds, -1), evicted.Status.Conditions)

	// cnat comes back (a new reconciler: no watch history).
	h.r = h.newReconciler(interceptor.Funcs{})
	h.clock.Step(time.Minute)
	_ = h.reconcileErr("evicted")
	h.clock.Step(10 * time.Minute)
	_ = h.reconcileErr("evicted")
	at := h.at("evicted")
	t.Logf("the At: phase %s, reason %s, attempts %d, message %q", at.Status.Phase, at.Status.Reason, at.Status.Attempts, at.Status.Message)
	var names []string
	for _, p := range h.pods("evicted") {
		names = append(names, p.Name)
	}
	// The evicted Pod, released once its run is recorded, may be gone.
	h.g.Expect(names).NotTo(ContainElement(h.podName("evicted", 2)), "the run ended with exit 0 before the eviction: no attempt 2")
	h.g.Expect(at.Status.Phase).To(Equal(cnatv1beta1.PhaseSucceeded))
}
