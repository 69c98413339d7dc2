package atcache

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// storeAt is an At whose status the controller wrote for its generation.
func storeAt(name, rv string, phase cnatv1beta1.Phase, reason string, scheduled time.Time) *cnatv1beta1.At {
	at := &cnatv1beta1.At{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "ns", UID: types.UID("uid-" + name), ResourceVersion: rv, Generation: 1,
	}}
	at.Spec.Command = "true"
	at.Status = cnatv1beta1.AtStatus{Phase: phase, Reason: reason, ObservedGeneration: 1, ScheduledTime: &metav1.Time{Time: scheduled}}
	return at
}

// TestStoreKeepsQuietAtsCompact: what the store keeps whole and what
// compact, decided from the status written for the At's generation.
func TestStoreKeepsQuietAtsCompact(t *testing.T) {
	now := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	later, soon := now.Add(time.Hour), now.Add(time.Minute)
	changed := storeAt("changed", "1", cnatv1beta1.PhasePending, cnatv1beta1.ReasonScheduled, later)
	changed.Generation = 2
	deleting := storeAt("deleting", "1", cnatv1beta1.PhasePending, cnatv1beta1.ReasonScheduled, later)
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	ttlSoon := storeAt("ttl-soon", "1", cnatv1beta1.PhaseSucceeded, cnatv1beta1.ReasonCompleted, now)
	ttlSoon.Spec.TTLSecondsAfterFinished = ptr.To[int32](60)
	ttlSoon.Status.CompletionTime = &metav1.Time{Time: now}
	ttlLater := ttlSoon.DeepCopy()
	ttlLater.Name, ttlLater.Spec.TTLSecondsAfterFinished = "ttl-later", ptr.To[int32](3600)

	for _, tc := range []struct {
		at      *cnatv1beta1.At
		compact bool
	}{
		{storeAt("later", "1", cnatv1beta1.PhasePending, cnatv1beta1.ReasonScheduled, later), true},
		{storeAt("soon", "1", cnatv1beta1.PhasePending, cnatv1beta1.ReasonScheduled, soon), false},
		{storeAt("suspended", "1", cnatv1beta1.PhasePending, cnatv1beta1.ReasonSuspended, now), true},
		{storeAt("invalid", "1", cnatv1beta1.PhasePending, cnatv1beta1.ReasonInvalidSpec, now), true},
		{storeAt("refused", "1", cnatv1beta1.PhasePending, cnatv1beta1.ReasonPodForbidden, later), false},
		{storeAt("running", "1", cnatv1beta1.PhaseRunning, cnatv1beta1.ReasonRunning, now), false},
		// Finished: compact only once a reconcile settled it
		// (TestStoreKeepsSettledAtsCompact): its Pods' events until then
		// each bring a reconcile, which would read a compact At from the
		// API server.
		{storeAt("done", "1", cnatv1beta1.PhaseFailed, cnatv1beta1.ReasonBackoffLimitExceeded, now), false},
		{ttlSoon, false},
		{ttlLater, false},
		{changed, false},
		{deleting, false},
		{&cnatv1beta1.At{ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: "ns", Generation: 1}}, false},
	} {
		t.Run(tc.at.Name, func(t *testing.T) {
			g := NewWithT(t)
			s := New(clocktesting.NewFakeClock(now), 5*time.Minute, nil, logr.Discard())
			g.Expect(reflected{s}.Add(tc.at)).To(Succeed())
			g.Expect(s.compact(types.NamespacedName{Namespace: "ns", Name: tc.at.Name})).To(Equal(tc.compact))
		})
	}
}

// TestStoreWakesAndTakesOnlyTheVersionItHolds: a compact At is woken
// prefetch before its time; an At read from the API server is kept whole
// only in the version the store holds; a status-only change is not
// reconciled, a change of spec is.
func TestStoreWakesAndTakesOnlyTheVersionItHolds(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	clk, s, queue := newTestStore(t, now)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	due := now.Add(time.Hour)
	at := storeAt("a", "1", cnatv1beta1.PhasePending, cnatv1beta1.ReasonScheduled, due)
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	g.Expect(reflected{s}.Replace([]any{at.DeepCopy()}, "1")).To(Succeed())
	s.attach(ctx, queue)
	g.Consistently(queue.Len).Should(BeZero(), "compact: not reconciled at start")

	// A status-only change (a new resourceVersion) is not reconciled.
	g.Expect(reflected{s}.Update(storeAt("a", "2", cnatv1beta1.PhasePending, cnatv1beta1.ReasonScheduled, due))).To(Succeed())
	g.Consistently(queue.Len).Should(BeZero())

	// Woken prefetch ahead, not before.
	clk.Step(54 * time.Minute)
	g.Consistently(queue.Len).Should(BeZero())
	clk.Step(time.Minute)
	g.Eventually(queue.Len).Should(Equal(1))
	req, _ := queue.Get()
	g.Expect(req.NamespacedName).To(Equal(key))
	queue.Done(req)

	// A read of another version is not taken; the one the store holds is.
	s.Offer(storeAt("a", "1", cnatv1beta1.PhasePending, cnatv1beta1.ReasonScheduled, due))
	g.Expect(s.compact(key)).To(BeTrue(), "older than the store's")
	s.Offer(storeAt("a", "3", cnatv1beta1.PhasePending, cnatv1beta1.ReasonScheduled, due))
	g.Expect(s.compact(key)).To(BeTrue(), "newer than the store's")
	s.Offer(storeAt("a", "2", cnatv1beta1.PhasePending, cnatv1beta1.ReasonScheduled, due))
	g.Expect(s.compact(key)).To(BeFalse(), "the store's version")
	whole, found := s.Get(key)
	g.Expect(found).To(BeTrue())
	g.Expect(whole.ResourceVersion).To(Equal("2"))

	// A change of spec is reconciled.
	changed := storeAt("a", "4", cnatv1beta1.PhasePending, cnatv1beta1.ReasonScheduled, due)
	changed.Generation = 2
	g.Expect(reflected{s}.Update(changed)).To(Succeed())
	g.Eventually(queue.Len).Should(Equal(1))

	// Gone while the watch was down: reconciled.
	req, _ = queue.Get()
	queue.Done(req)
	g.Expect(reflected{s}.Replace(nil, "5")).To(Succeed())
	g.Eventually(queue.Len).Should(Equal(1))
	_, found = s.Get(key)
	g.Expect(found).To(BeFalse())
}

// TestStoreKeepsSettledAtsCompact: an At a reconcile settled is compact
// while its versions of that incarnation and generation say it finished,
// whole again once read from the API server or changed, and woken prefetch
// before its TTL is up.
func TestStoreKeepsSettledAtsCompact(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	clk, s, queue := newTestStore(t, now)
	s.attach(t.Context(), queue)
	key := types.NamespacedName{Namespace: "ns", Name: "a"}
	drain := func() {
		for queue.Len() > 0 {
			req, _ := queue.Get()
			queue.Done(req)
		}
	}

	running := storeAt("a", "1", cnatv1beta1.PhaseRunning, cnatv1beta1.ReasonRunning, now)
	g.Expect(reflected{s}.Add(running)).To(Succeed())
	drain()
	// The reconcile that wrote the outcome settles the version it read;
	// the store holds it whole until the outcome's own version arrives.
	s.Settle(running, time.Time{})
	g.Expect(s.compact(key)).To(BeFalse(), "a running version stays whole")
	succeeded := storeAt("a", "2", cnatv1beta1.PhaseSucceeded, cnatv1beta1.ReasonCompleted, now)
	g.Expect(reflected{s}.Update(succeeded)).To(Succeed())
	g.Expect(s.compact(key)).To(BeTrue(), "its outcome: compact")
	relabelled := storeAt("a", "3", cnatv1beta1.PhaseSucceeded, cnatv1beta1.ReasonCompleted, now)
	relabelled.Labels = map[string]string{"team": "b"}
	g.Expect(reflected{s}.Update(relabelled)).To(Succeed())
	g.Expect(s.compact(key)).To(BeTrue(), "metadata edited, still finished: compact")
	g.Expect(reflected{s}.Replace([]any{relabelled.DeepCopy()}, "3")).To(Succeed())
	g.Expect(s.compact(key)).To(BeTrue(), "listed again: compact")
	g.Expect(queue.Len()).To(BeZero(), "none of it reconciled")

	// Read from the API server (a Pod event's reconcile), it is whole until
	// a reconcile settles it again.
	s.Offer(relabelled.DeepCopy())
	g.Expect(s.compact(key)).To(BeFalse())
	g.Expect(reflected{s}.Update(storeAt("a", "4", cnatv1beta1.PhaseSucceeded, cnatv1beta1.ReasonCompleted, now))).To(Succeed())
	g.Expect(s.compact(key)).To(BeFalse(), "not settled since it was read")
	at, _ := s.Get(key)
	s.Settle(at, time.Time{})
	g.Expect(s.compact(key)).To(BeTrue())

	// Edited: a new generation is reconciled, whole.
	edited := storeAt("a", "5", cnatv1beta1.PhaseSucceeded, cnatv1beta1.ReasonCompleted, now)
	edited.Generation = 2
	g.Expect(reflected{s}.Update(edited)).To(Succeed())
	g.Expect(s.compact(key)).To(BeFalse())
	g.Expect(queue.Len()).To(Equal(1))
	drain()

	// A TTL: settled only if it is up later than prefetch from now, and
	// woken prefetch before.
	ttl := storeAt("ttl", "1", cnatv1beta1.PhaseSucceeded, cnatv1beta1.ReasonCompleted, now)
	g.Expect(reflected{s}.Add(ttl)).To(Succeed())
	drain()
	ttlKey := types.NamespacedName{Namespace: "ns", Name: "ttl"}
	s.Settle(ttl, now.Add(4*time.Minute))
	g.Expect(s.compact(ttlKey)).To(BeFalse(), "its TTL within the prefetch: whole")
	s.Settle(ttl, now.Add(time.Hour))
	g.Expect(s.compact(ttlKey)).To(BeTrue())
	clk.Step(54 * time.Minute)
	g.Consistently(queue.Len).Should(BeZero())
	clk.Step(time.Minute)
	g.Eventually(queue.Len).Should(Equal(1), "woken prefetch before its TTL is up")

	// Being deleted: whole.
	deleting := storeAt("deleting", "1", cnatv1beta1.PhaseSucceeded, cnatv1beta1.ReasonCompleted, now)
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	g.Expect(reflected{s}.Add(deleting)).To(Succeed())
	s.Settle(deleting, time.Time{})
	g.Expect(s.compact(types.NamespacedName{Namespace: "ns", Name: "deleting"})).To(BeFalse())
}

// TestStoreTakesAtsAsTheyStreamIn: during the reflector's streaming list an
// At is in the store, and reconciled if it needs it, as soon as it arrives;
// the list's end reconciles what vanished and nothing twice.
func TestStoreTakesAtsAsTheyStreamIn(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	s := New(clocktesting.NewFakeClock(now), 5*time.Minute, nil, logr.Discard())
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer queue.ShutDown()
	g.Expect(reflected{s}.Add(storeAt("gone", "1", cnatv1beta1.PhasePending, cnatv1beta1.ReasonScheduled, now.Add(time.Hour)))).To(Succeed())
	s.attach(t.Context(), queue)

	transform := reflected{s}.Transformer()
	due, err := transform(storeAt("due", "2", cnatv1beta1.PhasePending, cnatv1beta1.ReasonScheduled, now.Add(time.Second)))
	g.Expect(err).NotTo(HaveOccurred())
	later, err := transform(storeAt("later", "3", cnatv1beta1.PhasePending, cnatv1beta1.ReasonScheduled, now.Add(time.Hour)))
	g.Expect(err).NotTo(HaveOccurred())
	_, found := s.Get(types.NamespacedName{Namespace: "ns", Name: "due"})
	g.Expect(found).To(BeTrue(), "in the store before the list ends")
	g.Expect(queue.Len()).To(Equal(1), "the At due now, reconciled at once")
	req, _ := queue.Get()
	g.Expect(req.Name).To(Equal("due"))
	queue.Done(req)

	g.Expect(reflected{s}.Replace([]any{due, later}, "3")).To(Succeed())
	g.Expect(s.synced).To(BeClosed())
	g.Expect(queue.Len()).To(Equal(1), "only the At that vanished")
	req, _ = queue.Get()
	g.Expect(req.Name).To(Equal("gone"))
	g.Expect(s.wakes).To(HaveLen(1), "the compact At keeps its wake-up")
}

// newTestStore is a store with a 5-minute prefetch on a fake clock at now,
// and a work queue for it, shut down with the test.
func newTestStore(t *testing.T, now time.Time) (*clocktesting.FakeClock, *Store, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	clk := clocktesting.NewFakeClock(now)
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(queue.ShutDown)
	return clk, New(clk, 5*time.Minute, nil, logr.Discard()), queue
}

// compact says whether the store holds the At of key compact.
func (s *Store) compact(key types.NamespacedName) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[key]
	return e != nil && e.at == nil
}
