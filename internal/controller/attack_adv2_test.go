package controller

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
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
