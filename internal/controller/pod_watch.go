package controller

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/programming-kubernetes/cnat/internal/lifecycle"
)

// podHistory remembers what the Pod watch, which delivers every change in
// order, showed that a Pod's latest state no longer shows: a deletion before
// it finished, a finish before any deletion, and the status a Pod finished
// cleanly with before it changed (docs/architecture.md, pod_watch.go).
type podHistory struct {
	mu       sync.Mutex
	seen     map[types.UID]struct{}
	finished map[types.UID]*corev1.PodStatus
	// finishedFirst are the Pods the watch saw finished and not deleted.
	finishedFirst map[types.UID]struct{}
}

// observe remembers pod if it is being deleted before it finished, or if it
// finished before any deletion.
func (d *podHistory) observe(obj client.Object) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	var set *map[types.UID]struct{}
	switch {
	case lifecycle.DeletedWhileRunning(pod):
		set = &d.seen
	case lifecycle.FinishedUndeleted(pod):
		set = &d.finishedFirst
	default:
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if *set == nil {
		*set = map[types.UID]struct{}{}
	}
	(*set)[pod.UID] = struct{}{}
}

// observeChange remembers how a Pod had finished when a later change makes
// it read otherwise.
func (d *podHistory) observeChange(oldObj, newObj client.Object) {
	old, ok := oldObj.(*corev1.Pod)
	pod, ok2 := newObj.(*corev1.Pod)
	if !ok || !ok2 || old.UID != pod.UID || !lifecycle.FinishedCleanly(old) {
		return
	}
	if lifecycle.Disrupted(pod) == lifecycle.Disrupted(old) && pod.Status.Phase == old.Status.Phase {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, deletedWhileRunning := d.seen[old.UID]; deletedWhileRunning {
		return
	}
	if _, kept := d.finished[old.UID]; kept {
		return
	}
	if d.finished == nil {
		d.finished = map[types.UID]*corev1.PodStatus{}
	}
	d.finished[old.UID] = old.Status.DeepCopy()
}

// forget drops a Pod that is gone.
func (d *podHistory) forget(obj client.Object) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.seen, obj.GetUID())
	delete(d.finished, obj.GetUID())
	delete(d.finishedFirst, obj.GetUID())
}

// mark gives each Pod what the watch showed: the status it finished with,
// if that changed since, and whether it was deleted before it finished.
func (d *podHistory) mark(pods []corev1.Pod) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range pods {
		if status, ok := d.finished[pods[i].UID]; ok {
			pods[i].Status = *status.DeepCopy()
		}
		_, seen := d.seen[pods[i].UID]
		_, finishedFirst := d.finishedFirst[pods[i].UID]
		lifecycle.MarkSeen(&pods[i], seen, finishedFirst && !seen)
	}
}

// podEvents enqueues the At a Pod names, before and after a change (as
// handler.EnqueueRequestsFromMapFunc does), and lets the history watch each
// state of the Pod on the way.
func (d *podHistory) podEvents() handler.TypedEventHandler[client.Object, reconcile.Request] {
	enqueue := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], objs ...client.Object) {
		for _, obj := range objs {
			for _, req := range atOfPod(context.Background(), obj) {
				q.Add(req)
			}
		}
	}
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			d.observe(e.Object)
			enqueue(q, e.Object)
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			d.observe(e.ObjectOld)
			d.observeChange(e.ObjectOld, e.ObjectNew)
			d.observe(e.ObjectNew)
			enqueue(q, e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			d.forget(e.Object)
			enqueue(q, e.Object)
		},
		GenericFunc: func(_ context.Context, e event.TypedGenericEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			d.observe(e.Object)
			enqueue(q, e.Object)
		},
	}
}
