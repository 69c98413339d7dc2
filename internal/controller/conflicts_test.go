package controller

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// TestAConflictIsTriedAgainSoonNotAsAnError: a status write refused because
// the At changed after the reconcile read it — a real conflict from the API
// server, made by a user labelling the At in between — is not returned as
// an error (which the work queue's overall rate limit of errors would
// queue behind every other conflict of a burst) but tried again after a
// short backoff of that At's own, which grows while the conflicts go on
// and starts over once a write got through.
func TestAConflictIsTriedAgainSoonNotAsAnError(t *testing.T) {
	h := newHarness(t)
	var interfere atomic.Int32
	h.r = h.newReconciler(interceptor.Funcs{
		SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			if interfere.Load() > 0 {
				interfere.Add(-1)
				at := &cnatv1beta1.At{}
				if err := apiClient.Get(ctx, types.NamespacedName{Namespace: h.ns, Name: "busy"}, at); err != nil {
					return err
				}
				at.Labels = map[string]string{"touched": time.Now().Format("150405.000000000")}
				if err := apiClient.Update(ctx, at); err != nil {
					return err
				}
			}
			return c.SubResource(sub).Apply(ctx, obj, opts...)
		},
	})
	h.createAt("busy", cnatv1beta1.AtSpec{Schedule: schedule(start.Add(time.Hour)), Command: "true"})
	reconcile := func() (ctrl.Result, error) {
		return h.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: h.ns, Name: "busy"}})
	}

	interfere.Store(2)
	res, err := reconcile()
	h.g.Expect(err).NotTo(HaveOccurred(), "a conflict is not an error")
	h.g.Expect(res.RequeueAfter).To(Equal(conflictBaseDelay))
	h.g.Expect(h.at("busy").Status.Phase).To(BeEmpty(), "the write was refused")
	res, err = reconcile()
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(res.RequeueAfter).To(Equal(2*conflictBaseDelay), "the backoff grows while the conflicts go on")

	res, err = reconcile()
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(h.at("busy").Status.Phase).To(Equal(cnatv1beta1.PhasePending), "tried again on the At as it is now, the write goes through")
	h.g.Expect(res.RequeueAfter).To(BeNumerically(">", time.Minute), "then it waits for its time")

	// The user suspends it, and labels it again before the controller
	// writes the suspension: a new run of conflicts starts from the first
	// delay.
	h.updateSpec("busy", func(spec *cnatv1beta1.AtSpec) { spec.Suspend = ptr.To(true) })
	interfere.Store(1)
	res, err = reconcile()
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(res.RequeueAfter).To(Equal(conflictBaseDelay), "a write that got through started the backoff over")
}

// TestConflictBackoffIsBounded: however long the conflicts of an At go on,
// it is tried again at least every maxRetryDelay.
func TestConflictBackoffIsBounded(t *testing.T) {
	g := NewWithT(t)
	c := newConflicts()
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "at"}}
	var last time.Duration
	for range 40 {
		last = c.When(req)
	}
	g.Expect(last).To(Equal(maxRetryDelay))
}
