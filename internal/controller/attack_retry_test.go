package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// TestCoTenantRefusalsDoNotDelayOthersRetries attacks "a refused Pod is
// asked again at most 30 s apart" as a co-tenant would: hundreds of Ats of
// theirs refused on every try (their own quota is full) beside one At of
// another tenant's, refused until its quota is raised. That At must get
// its Pod within maxRetryDelay of the raise, however many of the
// co-tenant's retries are waiting: retries are timed per At, never from a
// budget all tenants draw on. Judged from the API server: the Pod's
// creation time.
func TestCoTenantRefusalsDoNotDelayOthersRetries(t *testing.T) {
	h := newHarness(t)
	mallory := newHarness(t)
	fullQuota(mallory)
	lift := fullQuota(h)
	h.startManager(0)

	due := time.Now().Add(3 * time.Second).Truncate(time.Second)
	spec := cnatv1beta1.AtSpec{Schedule: schedule(due), Command: "echo", StartingDeadlineSeconds: ptr.To[int64](600)}
	const flood = 1000
	for i := range flood {
		mallory.createAt(fmt.Sprintf("flood-%d", i), spec)
	}
	// Every manager watches every namespace: the flood must not outlive
	// this test and load the next ones.
	t.Cleanup(func() {
		_ = apiClient.DeleteAllOf(context.Background(), &cnatv1beta1.At{}, client.InNamespace(mallory.ns))
	})
	h.createAt("victim", spec)

	reason := func(g Gomega) string { return h.atWith(g, "victim").Status.Reason }
	h.g.Eventually(reason, 30*time.Second, 100*time.Millisecond).Should(Equal(cnatv1beta1.ReasonPodForbidden), "refused at its time, and said so")
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
	}, time.Minute, 200*time.Millisecond).Should(Equal(flood), "the co-tenant's Ats are refused and retried too")
	// Long enough for the co-tenant's retries to pile up behind whatever
	// every retry shares.
	time.Sleep(5 * time.Second)

	lift()
	lifted := time.Now()
	pods := func(g Gomega) []corev1.Pod { return h.podsWith(g, "victim") }
	h.g.Eventually(pods, maxRetryDelay+10*time.Second, 200*time.Millisecond).Should(HaveLen(1),
		"asked again within %s of its quota's raise, %d refused Ats of a co-tenant's notwithstanding", maxRetryDelay, flood)
	created := h.pods("victim")[0].CreationTimestamp.Time
	t.Logf("the victim's Pod was created %s after its quota was raised", created.Sub(lifted).Round(time.Second))

	var mallorys corev1.PodList
	h.g.Expect(apiClient.List(h.ctx, &mallorys, client.InNamespace(mallory.ns), client.HasLabels{cnatv1beta1.LabelAt})).To(Succeed())
	h.g.Expect(mallorys.Items).To(BeEmpty(), "the co-tenant's quota still refuses theirs")
	h.g.Expect(h.atWith(h.g, "victim").Status.Phase).NotTo(Equal(cnatv1beta1.PhaseMissed))
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
				PriorityQueue: priorityqueue.New(h.ns, func(o *priorityqueue.Opts[reconcile.Request]) { o.RateLimiter = retryLimiter() }),
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
