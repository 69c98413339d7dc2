package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/lifecycle"
)

// effects are lifecycle.Effects for one reconcile of one At: reads from the
// cache and the API server, writes to the API server.
type effects struct {
	r   *AtReconciler
	ctx context.Context
	key types.NamespacedName

	// at is the At the reconcile last read, status the status it last
	// wrote, and acted says whether it created, released or deleted
	// anything: what settled reads.
	at     *cnatv1beta1.At
	status *cnatv1beta1.AtStatus
	acted  bool
}

var _ lifecycle.Effects = (*effects)(nil)

// CachedAt is the At from the store, read from the API server when held
// compact (and offered back) or not listed yet.
func (e *effects) CachedAt() (*cnatv1beta1.At, error) {
	if e.r.ats == nil {
		return e.read(e.r.readAt(e.ctx, e.r.Client, e.key))
	}
	at, found := e.r.ats.Get(e.key)
	if !found && !e.r.ats.Listed() {
		// Not listed yet: due while the store lists (atcache's dueWhileListing), or
		// an event of one of its Pods.
		return e.read(e.r.readAt(e.ctx, e.r.APIReader, e.key))
	}
	if at != nil || !found {
		return e.read(at, nil)
	}
	fresh, err := e.r.readAt(e.ctx, e.r.APIReader, e.key)
	if fresh != nil {
		e.r.ats.Offer(fresh)
	}
	return e.read(fresh, err)
}

func (e *effects) read(at *cnatv1beta1.At, err error) (*cnatv1beta1.At, error) {
	e.at = at
	return at, err
}

// settled says whether the reconcile left the At finished with nothing
// done but, at most, its status written: the store may then keep it
// compact (atcache.Store.Settle).
func (e *effects) settled() bool {
	if e.acted || e.at == nil {
		return false
	}
	if e.status != nil {
		return e.status.Phase.Finished()
	}
	return e.at.Status.Phase.Finished()
}

func (e *effects) CachedPods() ([]corev1.Pod, error) {
	return e.r.readPods(e.ctx, e.r.Client, e.key, e.r.podsIndexed)
}

func (e *effects) FreshAt(cached *cnatv1beta1.At, d lifecycle.Decision) (*cnatv1beta1.At, error) {
	return e.read(e.r.confirmAt(e.ctx, e.key, cached, d))
}

func (e *effects) FreshPods() ([]corev1.Pod, error) {
	return e.r.readPods(e.ctx, e.r.APIReader, e.key, false)
}

func (e *effects) CreatePod(at *cnatv1beta1.At, d lifecycle.Decision) (*lifecycle.Refusal, error) {
	e.acted = true
	return e.r.createPod(e.ctx, at, d)
}

func (e *effects) WriteStatus(at *cnatv1beta1.At, status *cnatv1beta1.AtStatus) error {
	e.status = status
	return e.r.writeStatus(e.ctx, at, status)
}

func (e *effects) Release(pod *corev1.Pod) error {
	e.acted = true
	return e.r.release(e.ctx, pod)
}

// DeleteAt deletes the At whose TTL is up: that very incarnation (its UID),
// with its Pods deleted by the garbage collector in the background.
func (e *effects) DeleteAt(at *cnatv1beta1.At) error {
	e.acted = true
	ctrl.LoggerFrom(e.ctx).Info("Deleting At: its TTL after finishing is up", "ttlSecondsAfterFinished", *at.Spec.TTLSecondsAfterFinished)
	err := e.r.Client.Delete(e.ctx, at, client.Preconditions{UID: &at.UID}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting At after its TTL: %w", err)
	}
	return nil
}
