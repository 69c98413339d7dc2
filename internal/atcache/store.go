// Package atcache is the controller's cache of Ats, in place of an
// informer's: compact entries of the Ats that wait, whole Ats near their
// time, one heap of wake-ups, and the reads that confirm a start
// (docs/architecture.md, "The At cache").
package atcache

import (
	"container/heap"
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
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// WakeUpPad is added to every timer so that a wake-up lands just after the
// instant it waits for, not a hair before it.
const WakeUpPad = 10 * time.Millisecond

// DefaultPrefetch is how long before an At needs the controller it is read
// whole from the API server and kept in memory (the --prefetch flag).
const DefaultPrefetch = 5 * time.Minute

// Store is the controller's cache of Ats: a compact entry for each At that
// is quiet beyond the prefetch, the decoded At for the others, one heap of
// wake-ups (docs/architecture.md, "The At cache", says why and how).
type Store struct {
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

// New is a store on clk that keeps Ats whole from prefetch before they need
// the controller (zero: DefaultPrefetch), and asks reader, the API server,
// for the Ats due while it lists every At (nil: it does not ask).
func New(clk clock.WithTicker, prefetch time.Duration, reader client.Reader, log logr.Logger) *Store {
	if prefetch <= 0 {
		prefetch = DefaultPrefetch
	}
	return &Store{
		clock:      clk,
		prefetch:   prefetch,
		reader:     reader,
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
	// at is the whole At (trimmed as Trim does), nil while compact.
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
	// found the At finished with nothing left to do before quiet (Settle).
	settled bool
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

// fill sets e from at, compact if at is quiet beyond prefetch from now.
// It keeps at itself when whole, as an informer keeps what it decoded.
func (s *Store) fill(e *atEntry, at *cnatv1beta1.At, now time.Time) {
	e.name, e.namespace = at.Name, s.intern(at.Namespace)
	e.uid, e.resourceVersion, e.generation = at.UID, at.ResourceVersion, at.Generation
	e.summary = summarize(at)
	if quiet, ok := quietUntil(at); ok && quiet.Sub(now) > s.prefetch {
		e.at, e.quiet = nil, quiet.UnixNano()
		return
	}
	e.at, e.quiet = Trim(at), 0
}

func (s *Store) intern(ns string) string {
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
func (s *Store) entryOf(obj any) (*atEntry, error) {
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

// take puts e in the store in place of what it held under its key.
func (s *Store) take(e *atEntry) {
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
func (s *Store) admitted(e *atEntry, changed bool) {
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

// Get returns a copy of the At of key if the store holds it whole; found
// says whether the store knows the At at all.
func (s *Store) Get(key types.NamespacedName) (at *cnatv1beta1.At, found bool) {
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

// Offer gives the store an At read from the API server for a compact entry.
// It is kept whole only if the store holds that very version (the watch is
// neither behind nor ahead of the read) and the At is no longer quiet.
func (s *Store) Offer(at *cnatv1beta1.At) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[types.NamespacedName{Namespace: at.Namespace, Name: at.Name}]
	if e == nil || e.at != nil || e.uid != at.UID || e.resourceVersion != at.ResourceVersion {
		return
	}
	if quiet, ok := quietUntil(at); ok && quiet.Sub(s.clock.Now()) > s.prefetch {
		return
	}
	// Read whole, it waits for a reconcile to settle it again.
	e.at, e.quiet, e.settled = Trim(at.DeepCopy()), 0, false
}

// Settle is told by a reconcile that the At, as it read it, has finished
// and needs nothing more from the controller before until (zero: never;
// its TTL otherwise): its status is written, its Pods released. Such an At
// is kept compact from then on, this version and the next ones of the same
// incarnation and generation that still say it finished (its status
// written again, its metadata edited), until prefetch before until. Only a
// reconcile can tell: the store does not see whether the At's Pods still
// carry the tracking finalizer, and each of their events brings a reconcile
// that would read a compact At from the API server. Thousands of settled
// Ats then cost what thousands of pending ones do.
func (s *Store) Settle(at *cnatv1beta1.At, until time.Time) {
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
// incarnation and generation), that Settle was told of old, and compacts
// e if it may. Called with mu held.
func (s *Store) carrySettled(old, e *atEntry) {
	if old.settled && e.at != nil {
		e.settled, e.quiet = true, old.quiet
		s.compactSettled(e)
	}
}

// compactSettled drops the At of a whole entry Settle was told of if the
// At says it finished and is not being deleted (the status write that
// finished it may come after the reconcile that settled it), and says
// whether it did. Called with mu held.
func (s *Store) compactSettled(e *atEntry) bool {
	if !e.settled || e.at == nil || !e.at.Status.Phase.Finished() || e.at.DeletionTimestamp != nil {
		return false
	}
	e.at = nil
	return true
}

// WakeAt has the heap wake the At of key at t, and says whether it will
// (false: the store does not know the At).
func (s *Store) WakeAt(key types.NamespacedName, t time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[key]
	if e == nil {
		return false
	}
	s.setWake(e, t.UnixNano())
	return true
}

// Listed says whether the store has listed every At since its start.
func (s *Store) Listed() bool {
	select {
	case <-s.synced:
		return true
	default:
		return false
	}
}

// Prefetch is how long before an At needs the controller the store holds
// it whole.
func (s *Store) Prefetch() time.Duration { return s.prefetch }
