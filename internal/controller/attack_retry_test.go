package controller

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// slowCreates makes the Pod creates of one namespace take delay once slow
// is set, as a loaded API server would: it lets a test fill the workers
// with a few thousand refused Ats rather than tens of thousands.
type slowCreates struct {
	client.Client
	ns    string
	delay time.Duration
	slow  atomic.Bool
}

func (c *slowCreates) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if _, pod := obj.(*corev1.Pod); pod && obj.GetNamespace() == c.ns && c.slow.Load() {
		time.Sleep(c.delay)
	}
	return c.Client.Create(ctx, obj, opts...)
}

// TestCoTenantRefusalsDelayNoOne attacks "a refused Pod is asked again at
// most 30 s apart" and "on time" as a co-tenant would: thousands of Ats of
// theirs refused on every try (their own quota full, no starting deadline),
// whose retries would take the workers 50 s of every 30 s. Beside them one
// tenant's At, refused until its quota is raised, must get its Pod within
// maxRetryDelay of the raise, and another tenant's At due just after must
// start on time: retries are timed per At and budgeted per namespace,
// never from a budget all share nor without bound. Judged from the API
// server: the Pods' creation times.
func TestCoTenantRefusalsDelayNoOne(t *testing.T) {
	h := newHarness(t)
	other := newHarness(t)
	mallory := newHarness(t)
	liftMallorys := fullQuota(mallory)
	lift := fullQuota(h)
	creates := &slowCreates{ns: mallory.ns, delay: 50 * time.Millisecond}
	h.startManagerWith(0, interceptor.Funcs{}, func(r *AtReconciler) {
		creates.Client = r.Client
		r.Client = creates
	})

	spec := cnatv1beta1.AtSpec{Schedule: schedule(time.Now()), Command: "echo"}
	const flood = 2000
	for i := range flood {
		at := &cnatv1beta1.At{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("flood-%d", i), Namespace: mallory.ns, Labels: map[string]string{"flood": "true"}}, Spec: spec}
		h.g.Expect(apiClient.Create(h.ctx, at)).To(Succeed())
	}
	// Every manager watches every namespace: the flood must not outlive
	// this test and load the next ones.
	t.Cleanup(func() {
		_ = apiClient.DeleteAllOf(context.Background(), &cnatv1beta1.At{}, client.InNamespace(mallory.ns))
	})
	h.g.Eventually(func(g Gomega) int {
		var ats cnatv1beta1.AtList
		g.Expect(apiClient.List(h.ctx, &ats, client.InNamespace(mallory.ns))).To(Succeed())
		refused := 0
		for _, at := range ats.Items {
			if at.Status.Reason == cnatv1beta1.ReasonPodForbidden {
				refused++
			}
		}
		return refused
	}, 2*time.Minute, time.Second).Should(Equal(flood), "the co-tenant's Ats are refused and retried")
	// From now on each retry of the flood holds a worker for 50 ms: 2 000
	// Ats retried every 30 s would need 3.3 s of work a second from the
	// manager's 2 workers.
	creates.slow.Store(true)
	h.createAt("victim", spec)
	mallory.createAt("neighbour", spec)
	h.g.Eventually(func(g Gomega) string { return h.atWith(g, "victim").Status.Reason }, 2*time.Minute, 200*time.Millisecond).
		Should(Equal(cnatv1beta1.ReasonPodForbidden), "refused at its time, and said so")
	h.g.Eventually(func(g Gomega) string { return mallory.atWith(g, "neighbour").Status.Reason }, 2*time.Minute, 200*time.Millisecond).
		Should(Equal(cnatv1beta1.ReasonPodForbidden), "the co-tenant's neighbour, refused beside the flood")
	time.Sleep(20 * time.Second)

	lift()
	lifted := time.Now()
	due := lifted.Add(3 * time.Second).Truncate(time.Second)
	other.createAt("due", cnatv1beta1.AtSpec{Schedule: schedule(due), Command: "echo", StartingDeadlineSeconds: ptr.To[int64](600)})
	h.g.Eventually(func(g Gomega) []corev1.Pod { return h.podsWith(g, "victim") }, maxRetryDelay+10*time.Second, 200*time.Millisecond).Should(HaveLen(1),
		"asked again within %s of its quota's raise, %d refused Ats of a co-tenant's notwithstanding", maxRetryDelay, flood)
	h.g.Eventually(func(g Gomega) []corev1.Pod { return other.podsWith(g, "due") }, 10*time.Second, 200*time.Millisecond).Should(HaveLen(1),
		"another tenant's At due 3 s after the raise starts, the co-tenant's retries notwithstanding")
	retried := h.pods("victim")[0].CreationTimestamp.Time
	started := other.pods("due")[0].CreationTimestamp.Time
	t.Logf("the victim's Pod %s after its quota's raise; the other tenant's first Pod %s after its time",
		retried.Sub(lifted).Round(time.Second), started.Sub(due).Round(time.Second))
	// Creation times are whole seconds.
	h.g.Expect(retried.Sub(lifted)).To(BeNumerically("<=", maxRetryDelay+time.Second), "the raise noticed within %s", maxRetryDelay)
	h.g.Expect(started.Sub(due)).To(BeNumerically("<=", 3*time.Second), "another tenant's At starts on time")

	var mallorys corev1.PodList
	h.g.Expect(apiClient.List(h.ctx, &mallorys, client.InNamespace(mallory.ns), client.HasLabels{cnatv1beta1.LabelAt})).To(Succeed())
	h.g.Expect(mallorys.Items).To(BeEmpty(), "the co-tenant's quota still refuses theirs")

	// The flood goes, and the quota of its namespace is raised: what its
	// neighbour was told to wait while the flood failed must not outlive
	// it.
	h.g.Expect(apiClient.DeleteAllOf(h.ctx, &cnatv1beta1.At{}, client.InNamespace(mallory.ns), client.MatchingLabels{"flood": "true"})).To(Succeed())
	liftMallorys()
	lifted = time.Now()
	h.g.Eventually(func(g Gomega) []corev1.Pod { return mallory.podsWith(g, "neighbour") }, maxRetryDelay+10*time.Second, 200*time.Millisecond).Should(HaveLen(1),
		"asked again within %s once the flood beside it is gone", maxRetryDelay)
	retried = mallory.pods("neighbour")[0].CreationTimestamp.Time
	t.Logf("the flood's neighbour's Pod %s after the flood went", retried.Sub(lifted).Round(time.Second))
	h.g.Expect(retried.Sub(lifted)).To(BeNumerically("<=", maxRetryDelay+time.Second), "no wait left from the flood")
}

// recordingQueue is controller-runtime's priority queue, recording the
// priority of every add of one At.
type recordingQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	of         reconcile.Request
	priorities chan int
}

func (q *recordingQueue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	for _, item := range items {
		if item == q.of {
			q.priorities <- ptr.Deref(o.Priority, 0)
		}
	}
	q.PriorityQueue.AddWithOpts(o, items...)
}

// TestRequeuesAreAtNormalPriority: an At first enqueued low, as a Pod of
// the first list after a restart enqueues it (handler.LowPriority), is
// requeued by controller-runtime's own controller at the normal priority,
// for a timer as after an error: never left behind all other work until
// its next event. Read from the work queue the controller requeues to.
func TestRequeuesAreAtNormalPriority(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec cnatv1beta1.AtSpec
		// refuse, if set, refuses the At's Pod (a requeue after an error).
		refuse func(h *harness) func()
	}{
		{name: "timer", spec: cnatv1beta1.AtSpec{Schedule: schedule(start.Add(time.Hour)), Command: "echo"}},
		{name: "error", spec: cnatv1beta1.AtSpec{Schedule: schedule(start), Command: "echo"}, refuse: fullQuota},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			if tc.refuse != nil {
				tc.refuse(h)
			}
			h.createAt("low", tc.spec)
			q := &recordingQueue{
				PriorityQueue: priorityqueue.New(h.ns, func(o *priorityqueue.Opts[reconcile.Request]) { o.RateLimiter = retryLimiter(newNamespaceShares()) }),
				of:            reconcile.Request{NamespacedName: client.ObjectKey{Namespace: h.ns, Name: "low"}},
				priorities:    make(chan int, 100),
			}
			c, err := controller.NewTypedUnmanaged(h.ns, controller.TypedOptions[reconcile.Request]{
				Reconciler:         h.r,
				SkipNameValidation: ptr.To(true),
				NewQueue: func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
					return q
				},
			})
			h.g.Expect(err).NotTo(HaveOccurred())
			go func() { _ = c.Start(h.ctx) }()
			q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(handler.LowPriority)}, q.of)
			h.g.Expect(<-q.priorities).To(Equal(handler.LowPriority), "the first add, as a Pod of the first list makes it")
			h.g.Eventually(q.priorities, 10*time.Second).Should(Receive(Equal(0)), "requeued at the normal priority")
		})
	}
}

// failing is how many Ats of ns the shares count as failing now.
func (n *namespaceShares) failingIn(ns string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.failing[ns].Len()
}

// TestFailingAtsLeaveTheShare: an At counts in its namespace's share only
// while it fails. Refused Ats that then stall (an invalid spec, not
// retried), are deleted, or get their Pod leave the count, through the
// controller-runtime work queue's Forget and the reconciler's own: an At
// left counted would slow its namespace's retries, and put them behind all
// other work, for good.
func TestFailingAtsLeaveTheShare(t *testing.T) {
	h := newHarness(t)
	lift := fullQuota(h)
	r, _, _ := h.startManagerWith(0, interceptor.Funcs{})
	spec := cnatv1beta1.AtSpec{Schedule: schedule(time.Now()), Command: "echo"}
	for _, name := range []string{"stalls", "deleted", "runs"} {
		h.createAt(name, spec)
	}
	h.g.Eventually(func() int { return r.shares.failingIn(h.ns) }, time.Minute, 100*time.Millisecond).Should(Equal(3), "three refused Ats fail")

	stalls := h.at("stalls")
	stalls.Spec.Schedule = time.Now().UTC().Format("2006-01-02T15:04:05")
	stalls.Spec.TimeZone = ptr.To("Mars/Olympus_Mons")
	h.g.Expect(apiClient.Update(h.ctx, stalls)).To(Succeed())
	h.g.Eventually(func(g Gomega) string { return h.atWith(g, "stalls").Status.Reason }, time.Minute, 100*time.Millisecond).
		Should(Equal(cnatv1beta1.ReasonInvalidSpec))
	h.g.Eventually(func() int { return r.shares.failingIn(h.ns) }, 10*time.Second, 100*time.Millisecond).Should(Equal(2), "a stalled At is no longer counted")

	h.g.Expect(apiClient.Delete(h.ctx, h.at("deleted"))).To(Succeed())
	h.g.Eventually(func() int { return r.shares.failingIn(h.ns) }, 10*time.Second, 100*time.Millisecond).Should(Equal(1), "a deleted At is no longer counted")

	lift()
	h.g.Eventually(func(g Gomega) []corev1.Pod { return h.podsWith(g, "runs") }, maxRetryDelay+10*time.Second, 200*time.Millisecond).Should(HaveLen(1))
	h.g.Eventually(func() int { return r.shares.failingIn(h.ns) }, 10*time.Second, 100*time.Millisecond).Should(BeZero(), "an At whose Pod was created is no longer counted")
}
