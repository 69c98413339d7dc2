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

// deletions remembers the Pods the watch showed being deleted with a grace
// period before they finished. A reconcile reads only a Pod's latest state,
// and once such a Pod has stopped its kubelet deletes it again with a grace
// period of 0: the Pod then reads like a finished Pod a janitor deleted at
// once, whose own outcome stands. The watch delivers every change in order,
// so what it showed is remembered here until the Pod is gone, and added to
// the Pods a reconcile reads (lifecycle.SeenDeletedWhileRunning). The At's
// status keeps the same fact across a restart once it records the attempt
// as PodStopping.
type deletions struct {
	mu   sync.Mutex
	seen map[types.UID]struct{}
}

// observe remembers pod if it is being deleted before it finished.
func (d *deletions) observe(obj client.Object) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || !lifecycle.DeletedWhileRunning(pod) {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.seen == nil {
		d.seen = map[types.UID]struct{}{}
	}
	d.seen[pod.UID] = struct{}{}
}

// forget drops a Pod that is gone.
func (d *deletions) forget(obj client.Object) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.seen, obj.GetUID())
}

// mark sets on each Pod whether the watch saw it deleted before it finished.
func (d *deletions) mark(pods []corev1.Pod) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range pods {
		_, seen := d.seen[pods[i].UID]
		lifecycle.MarkSeenDeletedWhileRunning(&pods[i], seen)
	}
}

// podEvents enqueues the At a Pod names, before and after a change (as
// handler.EnqueueRequestsFromMapFunc does), and lets deletions watch each
// state of the Pod on the way.
func (d *deletions) podEvents() handler.TypedEventHandler[client.Object, reconcile.Request] {
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
