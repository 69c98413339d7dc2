package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// sighting is what the bench's watch saw of one object.
type sighting struct {
	name  string
	owner types.UID // UID of the controller owner reference, if any
	// received is when the watch delivered the object's ADD to the bench:
	// the moment the API server made it visible, seen from outside.
	received time.Time
	// created is the object's creationTimestamp (whole seconds).
	created time.Time
	// terminal is when the watch first delivered the object finished; zero
	// while it has not.
	terminal time.Time
	// phase and attempts are the last seen At status.
	phase    string
	attempts int64
}

// recorder watches one namespace with informers and stamps, for every Pod,
// Job and At, when its ADD and its terminal state arrived.
type recorder struct {
	mu      sync.Mutex
	objects map[string]map[types.UID]*sighting // by kind
}

const (
	kindPod = "Pod"
	kindJob = "Job"
	kindAt  = "At"
)

var atResource = cnatv1beta1.GroupVersion.WithResource("ats")

// watchNamespace starts informers for the given kinds in namespace and waits
// until they have synced. They stop with ctx.
func watchNamespace(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, namespace string, kinds ...string) (*recorder, error) {
	r := &recorder{objects: map[string]map[types.UID]*sighting{}}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(namespace),
		informers.WithTransform(dropManagedFields))
	dynFactory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, namespace, nil)
	var synced []cache.InformerSynced
	for _, kind := range kinds {
		r.objects[kind] = map[types.UID]*sighting{}
		var informer cache.SharedIndexInformer
		switch kind {
		case kindPod:
			informer = factory.Core().V1().Pods().Informer()
		case kindJob:
			informer = factory.Batch().V1().Jobs().Informer()
		case kindAt:
			informer = dynFactory.ForResource(atResource).Informer()
		default:
			return nil, fmt.Errorf("cannot watch kind %q", kind)
		}
		handler := cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { r.observe(kind, obj, time.Now()) },
			UpdateFunc: func(_, obj any) { r.observe(kind, obj, time.Now()) },
		}
		if _, err := informer.AddEventHandler(handler); err != nil {
			return nil, fmt.Errorf("watching %ss: %w", kind, err)
		}
		synced = append(synced, informer.HasSynced)
	}
	factory.Start(ctx.Done())
	dynFactory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil, fmt.Errorf("the watches of namespace %s did not sync", namespace)
	}
	return r, nil
}

// dropManagedFields keeps the bench's own caches small.
func dropManagedFields(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// observe records an ADD or UPDATE delivered at now.
func (r *recorder) observe(kind string, obj any, now time.Time) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s, seen := r.objects[kind][m.GetUID()]
	if !seen {
		s = &sighting{name: m.GetName(), received: now, created: m.GetCreationTimestamp().Time}
		if ref := metav1.GetControllerOf(m); ref != nil {
			s.owner = ref.UID
		}
		r.objects[kind][m.GetUID()] = s
	}
	var terminal bool
	switch o := obj.(type) {
	case *corev1.Pod:
		terminal = o.Status.Phase == corev1.PodSucceeded || o.Status.Phase == corev1.PodFailed
	case *batchv1.Job:
		for _, c := range o.Status.Conditions {
			if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
				terminal = true
			}
		}
	case *unstructured.Unstructured:
		s.phase, _, _ = unstructured.NestedString(o.Object, "status", "phase")
		s.attempts, _, _ = unstructured.NestedInt64(o.Object, "status", "attempts")
		switch cnatv1beta1.Phase(s.phase) {
		case cnatv1beta1.PhaseSucceeded, cnatv1beta1.PhaseFailed, cnatv1beta1.PhaseMissed:
			terminal = true
		}
	}
	if terminal && s.terminal.IsZero() {
		s.terminal = now
	}
}

// snapshot returns a copy of what was seen of kind, by UID.
func (r *recorder) snapshot(kind string) map[types.UID]sighting {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[types.UID]sighting, len(r.objects[kind]))
	for uid, s := range r.objects[kind] {
		out[uid] = *s
	}
	return out
}

// waitTerminal waits until n objects of kind are terminal, or until deadline.
// It reports whether all were.
func (r *recorder) waitTerminal(ctx context.Context, kind string, n int, deadline time.Time) bool {
	terminal := func(context.Context) (bool, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		count := 0
		for _, s := range r.objects[kind] {
			if !s.terminal.IsZero() {
				count++
			}
		}
		return count >= n, nil
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Until(deadline), true, terminal) == nil
}

// firstByOwner returns, for each owner UID, the earliest sighting among the
// objects of kind it controls, and how many it controls.
func firstByOwner(objects map[types.UID]sighting) (first map[types.UID]sighting, count map[types.UID]int) {
	first = map[types.UID]sighting{}
	count = map[types.UID]int{}
	for _, s := range objects {
		if s.owner == "" {
			continue
		}
		count[s.owner]++
		if f, ok := first[s.owner]; !ok || s.received.Before(f.received) {
			first[s.owner] = s
		}
	}
	return first, count
}

// watchLag is the largest delay between an object's creationTimestamp and
// the arrival of its ADD: the cross-check of the received times. The
// timestamp has whole seconds, so up to 1 s of it is truncation.
func watchLag(objects map[types.UID]sighting) time.Duration {
	var lag time.Duration
	for _, s := range objects {
		lag = max(lag, s.received.Sub(s.created))
	}
	return lag
}
