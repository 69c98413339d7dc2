package controller

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// DefaultPrefetch is how long before an At needs the controller it is read
// whole from the API server and kept in memory (the --prefetch flag).
const DefaultPrefetch = 5 * time.Minute

// atStore is the controller's cache of Ats, in place of an informer's: a
// client-go Reflector (a streaming watch-list, then a watch) fills it, and it
// keeps each At whole only while the controller may need it.
//
// Most Ats are waiting: for their time (hours or days ahead), or for
// nothing (suspended, a spec that cannot run). Of such an At the
// controller needs nothing until its time comes, so the store keeps a
// compact entry — its name, incarnation, version, generation, what the
// metrics count, and the instant until which it is quiet — and the decoded
// At is dropped as soon as it arrives (an informer would keep it, about ten
// times the size). An At is quiet when its status, written for this very
// generation, says it is pending and scheduled, suspended or invalid: the
// decision on it can then only change with time, which the entry records,
// or with a change to the At or its Pods, which the watches deliver whole.
// A finished At is quiet once a reconcile says it settled (settle).
//
// One heap ordered by wake-up time, with one timer, wakes compact Ats
// prefetch before they are due, and Ats whose reconcile asked to be looked
// at again more than prefetch later (instead of a work-queue timer per At).
// A reconcile that finds an At compact reads it from the API server and
// offers it back: kept whole if the store still holds that very version and
// the At is no longer quiet. Ats due together are thus whole by their time
// and start from memory, confirmed by one LIST (dueReads), as before.
//
// It never decides anything: whatever it keeps, a reconcile decides on the
// whole At, from memory or from the API server.
type atStore struct {
	clock    clock.WithTicker
	prefetch time.Duration
	log      logr.Logger

	mu      sync.Mutex
	entries map[types.NamespacedName]*atEntry
	wakes   wakeHeap
	// queue is the controller's, once it started (the store runs on every
	// replica, the controller on the leader only).
	queue workqueue.TypedRateLimitingInterface[reconcile.Request]
	// reader reads from the API server (dueWhileListing).
	reader client.Reader
	rearm  chan struct{}
	synced chan struct{}
	once   sync.Once

	// namespaces interns namespace names: thousands of Ats share a few.
	nsMu       sync.Mutex
	namespaces map[string]string
}

func newAtStore(clk clock.WithTicker, prefetch time.Duration, log logr.Logger) *atStore {
	if prefetch <= 0 {
		prefetch = DefaultPrefetch
	}
	return &atStore{
		clock:      clk,
		prefetch:   prefetch,
		log:        log,
		entries:    map[types.NamespacedName]*atEntry{},
		rearm:      make(chan struct{}, 1),
		synced:     make(chan struct{}),
		namespaces: map[string]string{},
	}
}

// atEntry is what the store keeps of one At.
type atEntry struct {
	name, namespace string
	uid             types.UID
	resourceVersion string
	generation      int64
	// at is the whole At (trimmed as trimAt does), nil while compact.
	at *cnatv1beta1.At
	// quiet is when a compact At needs the controller again (Unix
	// nanoseconds; math.MaxInt64: not by itself).
	quiet   int64
	summary atSummary
	// wake is when the heap wakes the At (Unix nanoseconds; 0: not in it),
	// index its place in the heap.
	wake  int64
	index int
	// settled is set when a reconcile of this incarnation and generation
	// found the At finished with nothing left to do before quiet (settle).
	settled bool
}

// atSummary is what the metrics count of an At.
type atSummary struct {
	phase     cnatv1beta1.Phase
	scheduled int64 // status.scheduledTime, Unix nanoseconds; 0: none
	suspended bool
	invalid   bool
}

// GetObjectMeta lets client-go's key functions name an entry: the
// reflector's streaming list holds entries, not Ats (Transformer).
func (e *atEntry) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: e.namespace, Name: e.name}
}

func (e *atEntry) key() types.NamespacedName {
	return types.NamespacedName{Namespace: e.namespace, Name: e.name}
}

// quietUntil says until when an At needs nothing from the controller, if
// that follows from its status: written for this generation, it says the At
// waits for its time, is suspended, or cannot run. Anything else — new,
// changed, starting, running, refused, being deleted, finished — is not
// quiet by its status alone. A finished At is not: its Pods' events (the
// release of their tracking finalizer) each bring a reconcile, which would
// read a compact At from the API server; make bench saw that as a GET an At
// at the end of every burst. It is quiet once a reconcile settles it.
func quietUntil(at *cnatv1beta1.At) (time.Time, bool) {
	forever := time.Unix(0, math.MaxInt64)
	st := &at.Status
	if at.DeletionTimestamp != nil || st.ObservedGeneration != at.Generation ||
		st.Phase != cnatv1beta1.PhasePending || st.Attempts != 0 {
		return time.Time{}, false
	}
	switch st.Reason {
	case cnatv1beta1.ReasonScheduled:
		if st.ScheduledTime != nil {
			return st.ScheduledTime.Time, true
		}
	case cnatv1beta1.ReasonSuspended, cnatv1beta1.ReasonInvalidSpec:
		return forever, true
	}
	return time.Time{}, false
}

func summarize(at *cnatv1beta1.At) atSummary {
	s := atSummary{
		suspended: ptr.Deref(at.Spec.Suspend, false),
		invalid:   at.Status.Reason == cnatv1beta1.ReasonInvalidSpec,
	}
	// The phase as the constant, not the decoded string of each At.
	switch p := at.Status.Phase; p {
	case cnatv1beta1.PhasePending, "":
		s.phase = cnatv1beta1.PhasePending
	case cnatv1beta1.PhaseRunning:
		s.phase = cnatv1beta1.PhaseRunning
	case cnatv1beta1.PhaseSucceeded:
		s.phase = cnatv1beta1.PhaseSucceeded
	case cnatv1beta1.PhaseFailed:
		s.phase = cnatv1beta1.PhaseFailed
	case cnatv1beta1.PhaseMissed:
		s.phase = cnatv1beta1.PhaseMissed
	default:
		s.phase = p
	}
	if t := at.Status.ScheduledTime; t != nil {
		s.scheduled = t.UnixNano()
	}
	return s
}

// fill sets e from at, compact if at is quiet beyond prefetch from now.
// It keeps at itself when whole, as an informer keeps what it decoded.
func (s *atStore) fill(e *atEntry, at *cnatv1beta1.At, now time.Time) {
	e.name, e.namespace = at.Name, s.intern(at.Namespace)
	e.uid, e.resourceVersion, e.generation = at.UID, at.ResourceVersion, at.Generation
	e.summary = summarize(at)
	if quiet, ok := quietUntil(at); ok && quiet.Sub(now) > s.prefetch {
		e.at, e.quiet = nil, quiet.UnixNano()
		return
	}
	trimmed, _ := trimAt(at)
	e.at, e.quiet = trimmed.(*cnatv1beta1.At), 0
}

func (s *atStore) intern(ns string) string {
	s.nsMu.Lock()
	defer s.nsMu.Unlock()
	if in, ok := s.namespaces[ns]; ok {
		return in
	}
	s.namespaces[ns] = ns
	return ns
}

// entryOf turns what the reflector hands over into an entry: an At, or an
// entry its streaming list already made (Transformer).
func (s *atStore) entryOf(obj any) (*atEntry, error) {
	switch o := obj.(type) {
	case *atEntry:
		return o, nil
	case *cnatv1beta1.At:
		e := &atEntry{index: -1}
		s.fill(e, o, s.clock.Now())
		return e, nil
	case cache.DeletedFinalStateUnknown:
		return s.entryOf(o.Obj)
	}
	return nil, fmt.Errorf("the At store cannot hold a %T", obj)
}

// Transformer makes the reflector's streaming list hold entries rather
// than whole Ats (client-go's TransformingStore), so that the initial list
// of many Ats never holds them all decoded. Each entry is also taken into
// the store as it streams in, not only with the whole list at its end: an
// At due right after a restart starts while the rest are still listed.
// A reconcile does not need the others (it reads one At and its Pods), and
// one of an At not streamed yet finds it gone, as with any lagging cache,
// and confirms that with a read from the API server.
func (s *atStore) Transformer() cache.TransformFunc {
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

// Add, Update, Delete and Replace are what the reflector calls.

func (s *atStore) Add(obj any) error { return s.Update(obj) }

func (s *atStore) Update(obj any) error {
	e, err := s.entryOf(obj)
	if err != nil {
		return err
	}
	s.take(e)
	return nil
}

// take puts e in the store in place of what it held under its key.
func (s *atStore) take(e *atEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := e.key()
	old := s.entries[key]
	if old == e {
		return
	}
	// A change of spec, a new incarnation or a new At is reconciled; a
	// change of status or metadata only is not (the status is the
	// controller's own write).
	changed := old == nil || old.uid != e.uid || old.generation != e.generation
	if old != nil {
		if old.index >= 0 {
			heap.Remove(&s.wakes, old.index)
		}
		if !changed && old.wake != 0 {
			s.setWake(e, old.wake)
		}
		if !changed {
			s.carrySettled(old, e)
		}
	}
	s.entries[key] = e
	s.admitted(e, changed)
}

// admitted schedules a new entry: a compact one is woken prefetch before it
// needs the controller, a whole one is reconciled now if it changed.
func (s *atStore) admitted(e *atEntry, changed bool) {
	if e.at == nil {
		if e.quiet != math.MaxInt64 {
			s.setWake(e, e.quiet-int64(s.prefetch))
		}
		return
	}
	if changed {
		s.enqueue(e.key())
	}
}

func (s *atStore) Delete(obj any) error {
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

func (s *atStore) Replace(list []any, _ string) error {
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
		// One taken as it streamed in (prev == e) is not changed: it was
		// reconciled then if need be.
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
func (s *atStore) wholeLocked() int {
	n := 0
	for _, e := range s.entries {
		if e.at != nil {
			n++
		}
	}
	return n
}

func (s *atStore) Resync() error { return nil }

func (s *atStore) List() []any {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := make([]any, 0, len(s.entries))
	for _, e := range s.entries {
		list = append(list, e)
	}
	return list
}

func (s *atStore) ListKeys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]string, 0, len(s.entries))
	for key := range s.entries {
		keys = append(keys, key.String())
	}
	return keys
}

func (s *atStore) Get(obj any) (any, bool, error) {
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return nil, false, err
	}
	return s.GetByKey(key)
}

func (s *atStore) GetByKey(key string) (any, bool, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[types.NamespacedName{Namespace: ns, Name: name}]
	return e, ok, nil
}

var _ cache.TransformingStore = (*atStore)(nil)

// get returns a copy of the At of key if the store holds it whole; found
// says whether the store knows the At at all.
func (s *atStore) get(key types.NamespacedName) (at *cnatv1beta1.At, found bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[key]
	if e == nil {
		return nil, false
	}
	if e.at == nil {
		return nil, true
	}
	return e.at.DeepCopy(), true
}

// offer gives the store an At read from the API server for a compact entry.
// It is kept whole only if the store holds that very version (the watch is
// neither behind nor ahead of the read) and the At is no longer quiet.
func (s *atStore) offer(at *cnatv1beta1.At) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[types.NamespacedName{Namespace: at.Namespace, Name: at.Name}]
	if e == nil || e.at != nil || e.uid != at.UID || e.resourceVersion != at.ResourceVersion {
		return
	}
	if quiet, ok := quietUntil(at); ok && quiet.Sub(s.clock.Now()) > s.prefetch {
		return
	}
	trimmed, _ := trimAt(at.DeepCopy())
	// Read whole, it waits for a reconcile to settle it again.
	e.at, e.quiet, e.settled = trimmed.(*cnatv1beta1.At), 0, false
}

// settle is told by a reconcile that the At, as it read it, has finished
// and needs nothing more from the controller before until (zero: never;
// its TTL otherwise): its status is written, its Pods released. Such an At
// is kept compact from then on, this version and the next ones of the same
// incarnation and generation that still say it finished (its status
// written again, its metadata edited), until prefetch before until. Only a
// reconcile can tell: the store does not see whether the At's Pods still
// carry the tracking finalizer, and each of their events brings a reconcile
// that would read a compact At from the API server. Thousands of settled
// Ats then cost what thousands of pending ones do.
func (s *atStore) settle(at *cnatv1beta1.At, until time.Time) {
	quiet := int64(math.MaxInt64)
	if !until.IsZero() {
		quiet = until.UnixNano()
	}
	if time.Duration(quiet-s.clock.Now().UnixNano()) <= s.prefetch {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[types.NamespacedName{Namespace: at.Namespace, Name: at.Name}]
	if e == nil || e.at == nil || e.uid != at.UID || e.generation != at.Generation {
		return
	}
	e.settled, e.quiet = true, quiet
	if s.compactSettled(e) {
		s.admitted(e, false)
	}
}

// carrySettled passes on to e, a new version of the At of old (the same
// incarnation and generation), that settle was told of old, and compacts
// e if it may. Called with mu held.
func (s *atStore) carrySettled(old, e *atEntry) {
	if old.settled && e.at != nil {
		e.settled, e.quiet = true, old.quiet
		s.compactSettled(e)
	}
}

// compactSettled drops the At of a whole entry settle was told of if the
// At says it finished and is not being deleted (the status write that
// finished it may come after the reconcile that settled it), and says
// whether it did. Called with mu held.
func (s *atStore) compactSettled(e *atEntry) bool {
	if !e.settled || e.at == nil || !e.at.Status.Phase.Finished() || e.at.DeletionTimestamp != nil {
		return false
	}
	e.at = nil
	return true
}

// wakeAt has the heap wake the At of key at t, and says whether it will
// (false: the store does not know the At).
func (s *atStore) wakeAt(key types.NamespacedName, t time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[key]
	if e == nil {
		return false
	}
	s.setWake(e, t.UnixNano())
	return true
}

// summaries calls f with the summary of every At.
func (s *atStore) summaries(f func(atSummary)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.entries {
		f(e.summary)
	}
}

// setWake has the heap wake e at t (Unix nanoseconds), or earlier if it
// already would. Called with mu held.
func (s *atStore) setWake(e *atEntry, t int64) {
	t = max(t, 1)
	switch {
	case e.index < 0:
		e.wake = t
		heap.Push(&s.wakes, e)
	case t < e.wake:
		e.wake = t
		heap.Fix(&s.wakes, e.index)
	default:
		return
	}
	if e.index == 0 {
		select {
		case s.rearm <- struct{}{}:
		default:
		}
	}
}

// enqueue hands key to the controller, if it runs. Called with mu held.
func (s *atStore) enqueue(key types.NamespacedName) {
	if s.queue != nil {
		s.queue.Add(reconcile.Request{NamespacedName: key})
	}
}

// start runs the reflector until ctx ends: the store is filled on every
// replica, leader or not, so that a replica that becomes leader has it.
func (s *atStore) start(ctx context.Context, lw cache.ListerWatcher) error {
	r := cache.NewReflectorWithOptions(lw, &cnatv1beta1.At{}, s, cache.ReflectorOptions{Name: "ats"})
	r.RunWithContext(ctx)
	return nil
}

// attach is the controller's start: every whole At is reconciled, and the
// heap's wake-ups go to its queue from now on.
func (s *atStore) attach(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) {
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

// runWakes hands the At of each wake-up that is due to the queue, with one
// timer for the earliest.
func (s *atStore) runWakes(ctx context.Context) {
	for {
		s.mu.Lock()
		now := s.clock.Now().UnixNano()
		for len(s.wakes) > 0 && s.wakes[0].wake <= now {
			e := heap.Pop(&s.wakes).(*atEntry)
			e.wake = 0
			s.enqueue(e.key())
		}
		next := time.Duration(-1)
		if len(s.wakes) > 0 {
			next = time.Duration(s.wakes[0].wake - now)
		}
		s.mu.Unlock()
		var fire <-chan time.Time
		var timer clock.Timer
		if next >= 0 {
			timer = s.clock.NewTimer(next)
			fire = timer.C()
		}
		select {
		case <-ctx.Done():
		case <-fire:
		case <-s.rearm:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// wakeHeap orders entries by wake-up time (container/heap).
type wakeHeap []*atEntry

func (h wakeHeap) Len() int           { return len(h) }
func (h wakeHeap) Less(i, j int) bool { return h[i].wake < h[j].wake }
func (h wakeHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *wakeHeap) Push(x any) {
	e := x.(*atEntry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *wakeHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.index = -1
	return e
}
