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

// WakeUpPad lands every wake-up just after its instant, not a hair before.
const WakeUpPad = 10 * time.Millisecond

// DefaultPrefetch is how long before an At needs the controller it is read
// whole from the API server and kept in memory (the --prefetch flag).
const DefaultPrefetch = 5 * time.Minute

// Store is the controller's cache of Ats: a compact entry for each At quiet
// beyond the prefetch, the decoded At for the others, one heap of wake-ups.
type Store struct {
	clock    clock.WithTicker
	prefetch time.Duration
	log      logr.Logger

	mu      sync.Mutex
	entries map[types.NamespacedName]*atEntry
	wakes   wakeHeap
	// queue is the controller's, once it started (on the leader only).
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

// New is a store that keeps Ats whole from prefetch (zero: DefaultPrefetch)
// before they need the controller, and asks reader for the Ats due while it
// lists every At (nil: it does not ask).
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
	// quiet is when a compact At needs the controller again (Unix ns; MaxInt64: never by itself).
	quiet   int64
	summary atSummary
	// wake is when the heap wakes the At (Unix ns; 0: not in it), index its place.
	wake  int64
	index int
	// settled: Settle was told of this incarnation and generation.
	settled bool
}

// GetObjectMeta lets client-go's key functions name an entry (Transformer).
func (e *atEntry) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: e.namespace, Name: e.name}
}

func (e *atEntry) key() types.NamespacedName {
	return types.NamespacedName{Namespace: e.namespace, Name: e.name}
}

// quietUntil says until when an At needs nothing from the controller, if its
// status, written for this generation, says so: it waits for its time, is
// suspended, or cannot run. A finished At is quiet only once settled (Settle).
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

// fill sets e from at (kept itself when whole), compact if quiet beyond prefetch.
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

// entryOf turns what the reflector hands over, an At or an entry, into an entry.
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
	// Only a new At, incarnation or spec is reconciled, not a status write.
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

// Offer gives the store an At read from the API server for a compact entry,
// kept whole only if the store holds that very version and it is no longer quiet.
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

// Settle is told by a reconcile that the At, as it read it, has finished and
// needs nothing more before until (zero: never; its TTL otherwise). It is kept
// compact, in the versions of that incarnation and generation that still say
// it finished, until prefetch before until; only a reconcile can tell.
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

// carrySettled passes old's settling on to e, its next version, and compacts
// e if it may. Called with mu held.
func (s *Store) carrySettled(old, e *atEntry) {
	if old.settled && e.at != nil {
		e.settled, e.quiet = true, old.quiet
		s.compactSettled(e)
	}
}

// compactSettled drops the At of a settled entry if it says it finished and
// is not being deleted, and says whether it did. Called with mu held.
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

// Prefetch is how long before an At needs the controller it is held whole.
func (s *Store) Prefetch() time.Duration { return s.prefetch }
