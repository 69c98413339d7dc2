package atcache

import (
	"container/heap"
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// ListWatch lists and watches every At with a REST client of the manager's;
// the reflector streams the initial list where the API server supports it.
func ListWatch(mgr manager.Manager) (*cache.ListWatch, error) {
	gvk := cnatv1beta1.GroupVersion.WithKind("At")
	rc, err := apiutil.RESTClientForGVK(gvk, false, false, mgr.GetConfig(), serializer.NewCodecFactory(mgr.GetScheme()), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("making a client for Ats: %w", err)
	}
	return cache.NewListWatchFromClient(rc, "ats", "", fields.Everything()), nil
}

// Runnable runs the store's reflector over lw on every replica, leader or not.
func (s *Store) Runnable(lw cache.ListerWatcher) manager.Runnable {
	return storeRunnable{store: s, lw: lw}
}

// storeRunnable runs a store's reflector until its context ends.
type storeRunnable struct {
	store *Store
	lw    cache.ListerWatcher
}

func (r storeRunnable) Start(ctx context.Context) error {
	cache.NewReflectorWithOptions(r.lw, &cnatv1beta1.At{}, reflected{r.store}, cache.ReflectorOptions{Name: "ats"}).RunWithContext(ctx)
	return nil
}

// NeedLeaderElection is false: a standby takes over without listing every At.
func (r storeRunnable) NeedLeaderElection() bool { return false }

// Source is the controller's source of At events: the store's changes and wake-ups.
func (s *Store) Source() source.TypedSyncingSource[reconcile.Request] { return atSource{store: s} }

// atSource is the store as a controller-runtime source.
type atSource struct{ store *Store }

func (s atSource) Start(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	s.store.attach(ctx, queue)
	return nil
}

// WaitForSync returns at once: an At due right after a restart starts on
// time, before every At is listed (Transformer).
func (s atSource) WaitForSync(context.Context) error { return nil }

func (s atSource) String() string { return "ats" }

// reflected is the store as the reflector fills it (a TransformingStore).
type reflected struct{ *Store }

// Transformer makes the reflector's streaming list hold entries, not decoded
// Ats, and takes each into the store as it streams in, so an At due right
// after a restart starts while the rest are still listed.
func (s reflected) Transformer() cache.TransformFunc {
	return func(obj any) (any, error) {
		e, err := s.entryOf(obj)
		if err != nil {
			return nil, err
		}
		if _, streamed := obj.(*cnatv1beta1.At); streamed {
			s.take(e)
		}
		return e, nil
	}
}

// Add, Update, Delete and Replace are what the reflector calls; the
// reconciler reads with Store.Get.

func (s reflected) Add(obj any) error { return s.Update(obj) }

func (s reflected) Update(obj any) error {
	e, err := s.entryOf(obj)
	if err != nil {
		return err
	}
	s.take(e)
	return nil
}

func (s reflected) Delete(obj any) error {
	// Only its key: an At that is gone is not worth an entry.
	k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return err
	}
	ns, name, err := cache.SplitMetaNamespaceKey(k)
	if err != nil {
		return err
	}
	key := types.NamespacedName{Namespace: ns, Name: name}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.entries[key]; old != nil {
		if old.index >= 0 {
			heap.Remove(&s.wakes, old.index)
		}
		delete(s.entries, key)
	}
	s.enqueue(key)
	return nil
}

func (s reflected) Replace(list []any, _ string) error {
	fresh := make(map[types.NamespacedName]*atEntry, len(list))
	for _, obj := range list {
		e, err := s.entryOf(obj)
		if err != nil {
			return err
		}
		fresh[e.key()] = e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.entries
	s.entries = fresh
	// The heap is rebuilt, with the wake-ups of the entries that stay.
	wakes := make(map[types.NamespacedName]int64, len(s.wakes))
	for _, e := range s.wakes {
		wakes[e.key()] = e.wake
		e.index, e.wake = -1, 0
	}
	s.wakes = nil
	for key, e := range fresh {
		prev := old[key]
		delete(old, key)
		changed := prev == nil || prev.uid != e.uid || prev.generation != e.generation
		if w := wakes[key]; !changed && w != 0 {
			s.setWake(e, w)
		}
		if !changed && prev != e {
			s.carrySettled(prev, e)
		}
		// One taken as it streamed in (prev == e) was reconciled then.
		s.admitted(e, changed)
	}
	for key := range old {
		s.enqueue(key) // gone while the watch was down
	}
	s.once.Do(func() {
		s.log.Info("Listed every At", "ats", len(fresh), "compact", len(fresh)-s.wholeLocked())
		close(s.synced)
	})
	return nil
}

// wholeLocked counts the entries held whole. Called with mu held.
func (s *Store) wholeLocked() int {
	n := 0
	for _, e := range s.entries {
		if e.at != nil {
			n++
		}
	}
	return n
}

func (s reflected) Resync() error { return nil }

func (s reflected) List() []any {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := make([]any, 0, len(s.entries))
	for _, e := range s.entries {
		list = append(list, e)
	}
	return list
}

func (s reflected) ListKeys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]string, 0, len(s.entries))
	for key := range s.entries {
		keys = append(keys, key.String())
	}
	return keys
}

func (s reflected) Get(obj any) (any, bool, error) {
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return nil, false, err
	}
	return s.GetByKey(key)
}

func (s reflected) GetByKey(key string) (any, bool, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[types.NamespacedName{Namespace: ns, Name: name}]
	return e, ok, nil
}

var _ cache.TransformingStore = reflected{}

// attach is the controller's start: every whole At is reconciled, and the
// heap's wake-ups go to its queue from now on.
func (s *Store) attach(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	s.mu.Lock()
	s.queue = queue
	for key, e := range s.entries {
		if e.at != nil {
			s.enqueue(key)
		}
	}
	s.mu.Unlock()
	go s.runWakes(ctx)
	if s.reader != nil {
		go s.dueWhileListing(ctx, s.reader)
	}
}
