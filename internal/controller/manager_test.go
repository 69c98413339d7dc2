package controller

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/atcache"
	"github.com/programming-kubernetes/cnat/internal/atpod"
)

// startManager runs the controller as cnat-controller does: in a manager,
// with the real clock, the filtered Pod cache, the store of Ats (prefetch
// ahead; 0: the default) and real Events.
func (h *harness) startManager(prefetch time.Duration) (*AtReconciler, *prometheus.Registry, ctrl.Manager) {
	h.t.Helper()
	return h.startManagerWith(prefetch, interceptor.Funcs{})
}

// startManagerWith is startManager with the reconciler's reads from the API
// server going through funcs first.
func (h *harness) startManagerWith(prefetch time.Duration, funcs interceptor.Funcs, opts ...func(*AtReconciler)) (*AtReconciler, *prometheus.Registry, ctrl.Manager) {
	h.t.Helper()
	mgr, err := ctrl.NewManager(testConfig, ctrl.Options{
		Scheme:                 testScheme,
		Cache:                  CacheOptions(),
		Client:                 ClientOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	h.g.Expect(err).NotTo(HaveOccurred())
	registry := prometheus.NewRegistry()
	r := &AtReconciler{
		Client:    mgr.GetClient(),
		APIReader: interceptor.NewClient(apiClient, funcs),
		Clock:     clock.RealClock{},
		Recorder:  mgr.GetEventRecorder(cnatv1beta1.FieldManager),
		Pods:      atpod.PodOptions{DefaultImage: "busybox:1.37"},
		Metrics:   NewMetrics(registry),
		Prefetch:  prefetch,
	}
	for _, opt := range opts {
		opt(r)
	}
	h.g.Expect(r.SetupWithManager(mgr, 2)).To(Succeed())
	go func() { _ = mgr.Start(h.ctx) }()
	return r, registry, mgr
}

// countAtGets counts the reconciler's GETs of the harness's Ats from the
// API server (the store holds other tests' Ats too).
func (h *harness) countAtGets(gets *atomic.Int32) func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
	return func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if _, ok := obj.(*cnatv1beta1.At); ok && key.Namespace == h.ns {
			gets.Add(1)
		}
		return c.Get(ctx, key, obj, opts...)
	}
}

// TestManagerRunsAnAtOnTime runs an At in the manager, from creation to its
// Pod's end, within the store's prefetch (it is whole until it settles);
// once settled, neither it nor its released Pod is held whole in memory.
func TestManagerRunsAnAtOnTime(t *testing.T) {
	h := newHarness(t)
	var gets atomic.Int32
	r, registry, mgr := h.startManagerWith(0, interceptor.Funcs{Get: h.countAtGets(&gets)})

	// A Pod that is not cnat's stays out of the controller's cache.
	foreign := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "foreign", Namespace: h.ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	h.g.Expect(apiClient.Create(h.ctx, foreign)).To(Succeed())

	// Far enough ahead that a loaded machine has it Pending well before; how
	// late a start is on time is make bench's to measure, not a test's.
	scheduled := time.Now().Add(6 * time.Second).Truncate(time.Second)
	h.g.Expect(apiClient.Create(h.ctx, &cnatv1beta1.At{
		ObjectMeta: metav1.ObjectMeta{Name: "soon", Namespace: h.ns, Annotations: map[string]string{
			corev1.LastAppliedConfigAnnotation: `{"spec":{"command":"echo soon"}}`, // as kubectl apply writes it
		}},
		Spec: cnatv1beta1.AtSpec{Schedule: schedule(scheduled), Command: "echo soon"},
	})).To(Succeed())

	phase := func(g Gomega) cnatv1beta1.Phase { return h.atWith(g, "soon").Status.Phase }
	pods := func(g Gomega) []corev1.Pod { return h.podsWith(g, "soon") }
	h.g.Eventually(phase, 5*time.Second).Should(Equal(cnatv1beta1.PhasePending))
	h.g.Consistently(pods, time.Until(scheduled)-300*time.Millisecond, 100*time.Millisecond).Should(BeEmpty(), "not before its time")
	h.g.Eventually(pods, 20*time.Second, 50*time.Millisecond).Should(HaveLen(1))
	pod := h.pods("soon")[0]
	h.g.Expect(pod.CreationTimestamp.Time).To(BeTemporally(">=", scheduled), "not before its time")

	h.g.Eventually(phase, 10*time.Second).Should(Equal(cnatv1beta1.PhaseRunning))
	var cached corev1.PodList
	h.g.Expect(mgr.GetCache().List(h.ctx, &cached, client.InNamespace(h.ns))).To(Succeed())
	h.g.Expect(cached.Items).To(ConsistOf(HaveField("Name", pod.Name)), "only cnat's Pods are cached")
	beforeEnd := gets.Load()
	h.finishPod(pod.Name, 0)
	h.g.Eventually(phase, 10*time.Second).Should(Equal(cnatv1beta1.PhaseSucceeded))
	h.g.Expect(h.at("soon").Status.ExitCode).To(Equal(ptr.To[int32](0)))

	// Released, the Pod leaves the cache, and stays in the cluster labelled
	// so: a settled At costs the controller no Pod in memory.
	h.g.Eventually(func(g Gomega) []corev1.Pod {
		g.Expect(mgr.GetCache().List(h.ctx, &cached, client.InNamespace(h.ns))).To(Succeed())
		return cached.Items
	}, 5*time.Second, 20*time.Millisecond).Should(BeEmpty(), "a released Pod leaves the cache")
	released := h.pods("soon")
	h.g.Expect(released).To(ConsistOf(HaveField("Name", pod.Name)), "the Pod stays")
	h.g.Expect(released[0].Labels).To(HaveKeyWithValue(cnatv1beta1.LabelReleased, "true"))
	h.g.Expect(released[0].Finalizers).NotTo(ContainElement(cnatv1beta1.TrackingFinalizer))

	// Settled — its status written, its Pod released — the At is kept
	// compact, and nothing reads it from the API server meanwhile. A later
	// reconcile (a Pod event) reads it once, changes nothing, and leaves it
	// compact again.
	key := client.ObjectKey{Namespace: h.ns, Name: "soon"}
	h.g.Eventually(func() bool { return compact(r.ats, key) }, 5*time.Second, 20*time.Millisecond).Should(BeTrue(), "settled: compact")
	h.g.Consistently(gets.Load, time.Second).Should(Equal(beforeEnd),
		"neither its end nor its settling, nor anything after, reads the At from the API server")
	before := gets.Load()
	settled := h.at("soon").ResourceVersion
	_, err := r.Reconcile(h.ctx, ctrl.Request{NamespacedName: key})
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(gets.Load()).To(Equal(before+1), "read once")
	h.g.Expect(h.at("soon").ResourceVersion).To(Equal(settled), "a settled At stays as it is")
	h.g.Expect(compact(r.ats, key)).To(BeTrue(), "and compact")

	var events eventsv1.EventList
	h.g.Eventually(func(g Gomega) []string {
		g.Expect(apiClient.List(h.ctx, &events, client.InNamespace(h.ns))).To(Succeed())
		var reasons []string
		for _, e := range events.Items {
			if e.Regarding.Name == "soon" {
				reasons = append(reasons, e.Reason)
			}
		}
		return reasons
	}).Should(ConsistOf("Succeeded"), "an At that runs as it should gets one Event, its outcome")

	h.g.Expect(testutil.CollectAndCount(r.Metrics.FiringLateness)).To(Equal(1))
	h.g.Expect(testutil.ToFloat64(r.Metrics.Runs.WithLabelValues("Succeeded"))).To(Equal(1.0))
	h.g.Expect(testutil.GatherAndCount(registry, "cnat_ats")).To(Equal(5), "one series per phase")
}

// TestManagerWakesACompactAtInTime: an At due beyond the prefetch is kept
// compact once its status is written (the store drops the decoded At), is
// woken prefetch before its time, read whole, and starts at its time, not
// before.
func TestManagerWakesACompactAtInTime(t *testing.T) {
	h := newHarness(t)
	const prefetch = 2 * time.Second
	r, _, _ := h.startManager(prefetch)
	scheduled := time.Now().Add(8 * time.Second).Truncate(time.Second)
	h.createAt("later", cnatv1beta1.AtSpec{Schedule: schedule(scheduled), Command: "echo later"})
	key := client.ObjectKey{Namespace: h.ns, Name: "later"}

	h.g.Eventually(func() bool { return compact(r.ats, key) }, 4*time.Second, 20*time.Millisecond).Should(BeTrue(),
		"pending and due beyond the prefetch: compact")
	h.g.Expect(h.at("later").Status.Phase).To(Equal(cnatv1beta1.PhasePending))
	h.g.Eventually(func() bool { return compact(r.ats, key) }, time.Until(scheduled.Add(-prefetch/2)), 20*time.Millisecond).Should(BeFalse(),
		"woken and read whole the prefetch before its time")
	h.g.Expect(time.Now()).To(BeTemporally(">=", scheduled.Add(-prefetch-time.Second)), "not read whole long before the prefetch")
	h.g.Expect(h.pods("later")).To(BeEmpty(), "not before its time")
	pods := func(g Gomega) []corev1.Pod { return h.podsWith(g, "later") }
	h.g.Eventually(pods, 20*time.Second, 50*time.Millisecond).Should(HaveLen(1))
	h.g.Expect(h.pods("later")[0].CreationTimestamp.Time).To(BeTemporally(">=", scheduled), "not before its time")
}

// TestRestartKeepsPendingAtsCompact: a controller started beside many
// pending Ats (their status written by an earlier one) holds them compact
// from its first list and reads none of them from the API server until
// they are near their time; one due seconds after the start is woken by the
// store alone (no reconcile has set it a time) and starts at its time.
func TestRestartKeepsPendingAtsCompact(t *testing.T) {
	h := newHarness(t)
	const n = 40
	scheduled := time.Now().Add(time.Hour).Truncate(time.Second)
	for i := range n {
		at := h.createAt(fmt.Sprintf("pending-%d", i), cnatv1beta1.AtSpec{Schedule: schedule(scheduled), Command: "true"})
		h.reconcile(at.Name)
		h.g.Expect(h.at(at.Name).Status.Reason).To(Equal(cnatv1beta1.ReasonScheduled))
	}
	const prefetch = 2 * time.Second
	soon := time.Now().Add(7 * time.Second).Truncate(time.Second)
	h.clock.SetTime(time.Now())
	h.createAt("soon", cnatv1beta1.AtSpec{Schedule: schedule(soon), Command: "true"})
	h.reconcile("soon")
	h.g.Expect(h.at("soon").Status.Reason).To(Equal(cnatv1beta1.ReasonScheduled))

	var gets atomic.Int32
	r, _, mgr := h.startManagerWith(prefetch, interceptor.Funcs{Get: h.countAtGets(&gets)})
	h.g.Expect(mgr.GetCache().WaitForCacheSync(h.ctx)).To(BeTrue())
	h.g.Eventually(r.ats.Listed, 10*time.Second).Should(BeTrue())
	for i := range n {
		h.g.Expect(compact(r.ats, client.ObjectKey{Namespace: h.ns, Name: fmt.Sprintf("pending-%d", i)})).To(BeTrue())
	}
	h.g.Consistently(gets.Load, time.Second).Should(BeZero(), "no At read from the API server")

	soonKey := client.ObjectKey{Namespace: h.ns, Name: "soon"}
	h.g.Expect(compact(r.ats, soonKey)).To(BeTrue())
	h.g.Eventually(func() bool { return compact(r.ats, soonKey) }, time.Until(soon.Add(-prefetch/2)), 20*time.Millisecond).Should(BeFalse(),
		"woken by the store and read whole the prefetch before its time")
	h.g.Expect(gets.Load()).To(BeNumerically("==", 1), "that one At read")
	pods := func(g Gomega) []corev1.Pod { return h.podsWith(g, "soon") }
	h.g.Eventually(pods, 20*time.Second, 50*time.Millisecond).Should(HaveLen(1))
	h.g.Expect(h.pods("soon")[0].CreationTimestamp.Time).To(BeTemporally(">=", soon), "not before its time")
}

// heldListWatch holds the store's list and watch back until release is
// closed: a restart whose list of every At takes long.
type heldListWatch struct {
	*cache.ListWatch
	release <-chan struct{}
}

// held waits for release, or for ctx to end.
func (l heldListWatch) held(ctx context.Context) error {
	select {
	case <-l.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l heldListWatch) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if err := l.held(ctx); err != nil {
		return nil, err
	}
	return l.ListWatch.ListWithContext(ctx, opts)
}

func (l heldListWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if err := l.held(ctx); err != nil {
		return nil, err
	}
	return l.ListWatch.WatchWithContext(ctx, opts)
}

// TestAtDueWhileTheStoreListsStartsOnTime: after a restart, the store's
// list of every At is held back past an At's time (beside 100 000 Ats, an
// At late in the list's key order is listed only after its time). The At
// still starts at its time, while the store lists: the controller asks the
// API server each second which Ats are due. So does an At created while no
// controller ran, whose time is in its spec only (no status yet).
func TestAtDueWhileTheStoreListsStartsOnTime(t *testing.T) {
	h := newHarness(t)
	soon := time.Now().Add(4 * time.Second).Truncate(time.Second)
	h.clock.SetTime(time.Now())
	h.createAt("soon", cnatv1beta1.AtSpec{Schedule: schedule(soon), Command: "true"})
	h.reconcile("soon")
	h.g.Expect(h.at("soon").Status.ScheduledTime.Time).To(BeTemporally("==", soon))
	// Created while no controller runs: no status, its time in its spec only.
	fresh := soon.Add(time.Second)
	h.createAt("fresh", cnatv1beta1.AtSpec{Schedule: schedule(fresh), Command: "true"})
	h.g.Expect(h.at("fresh").Status.Phase).To(BeEmpty())

	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	r, _, mgr := h.startManagerWith(0, interceptor.Funcs{}, func(r *AtReconciler) {
		r.holdList = func(lw cache.ListerWatcher) cache.ListerWatcher { return heldListWatch{lw.(*cache.ListWatch), release} }
	})
	h.g.Expect(mgr.GetCache().WaitForCacheSync(h.ctx)).To(BeTrue())

	for name, due := range map[string]time.Time{"soon": soon, "fresh": fresh} {
		pods := func(g Gomega) []corev1.Pod { return h.podsWith(g, name) }
		h.g.Eventually(pods, 10*time.Second, 50*time.Millisecond).Should(HaveLen(1), name)
		h.g.Expect(r.ats.Listed()).To(BeFalse(), "%s started while the store still lists", name)
		created := h.pods(name)[0].CreationTimestamp.Time
		h.g.Expect(created).To(BeTemporally(">=", due), "%s not before its time", name)
		h.g.Expect(created).To(BeTemporally("<=", due.Add(time.Second)), "%s at its time (to the second), not when the list is done", name)
	}
}

// compact says whether the store holds the At of key compact: it knows the
// At but holds no copy of it.
func compact(ats *atcache.Store, key client.ObjectKey) bool {
	at, found := ats.Get(key)
	return found && at == nil
}
