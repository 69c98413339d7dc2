package controller

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/apply"
)

// TestManagerRunsAnAtOnTime runs the controller as cnat-controller does:
// in a manager, with the real clock, the filtered Pod cache and real Events.
func TestManagerRunsAnAtOnTime(t *testing.T) {
	h := newHarness(t)
	mgr, err := ctrl.NewManager(testConfig, ctrl.Options{
		Scheme:                 testScheme,
		Cache:                  CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	h.g.Expect(err).NotTo(HaveOccurred())
	registry := prometheus.NewRegistry()
	r := &AtReconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Clock:     clock.RealClock{},
		Recorder:  mgr.GetEventRecorder(cnatv1beta1.FieldManager),
		Pods:      apply.PodOptions{DefaultImage: "busybox:1.37"},
		Metrics:   NewMetrics(registry, mgr.GetCache()),
	}
	h.g.Expect(r.SetupWithManager(mgr, 2)).To(Succeed())
	go func() { _ = mgr.Start(h.ctx) }()

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
	h.finishPod(pod.Name, 0)
	h.g.Eventually(phase, 10*time.Second).Should(Equal(cnatv1beta1.PhaseSucceeded))
	h.g.Expect(h.at("soon").Status.ExitCode).To(Equal(ptr.To[int32](0)))

	var cached corev1.PodList
	h.g.Expect(mgr.GetCache().List(h.ctx, &cached, client.InNamespace(h.ns))).To(Succeed())
	h.g.Expect(cached.Items).To(ConsistOf(HaveField("Name", pod.Name)), "only cnat's Pods are cached")

	// The cache keeps of an At only what the controller reads, and that is
	// enough to reconcile a settled At without changing it.
	var cachedAt cnatv1beta1.At
	h.g.Eventually(func(g Gomega) cnatv1beta1.Phase {
		g.Expect(mgr.GetCache().Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "soon"}, &cachedAt)).To(Succeed())
		return cachedAt.Status.Phase
	}).Should(Equal(cnatv1beta1.PhaseSucceeded))
	h.g.Expect(cachedAt.ManagedFields).To(HaveExactElements(HaveField("Manager", cnatv1beta1.StatusFieldManager)))
	h.g.Expect(cachedAt.Annotations).NotTo(HaveKey(corev1.LastAppliedConfigAnnotation))
	settled := h.at("soon").ResourceVersion
	_, err = r.Reconcile(h.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: h.ns, Name: "soon"}})
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(h.at("soon").ResourceVersion).To(Equal(settled), "a settled At stays as it is")

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
	}).Should(ConsistOf("Started", "Succeeded"), "an At that runs as it should gets two Events")

	h.g.Expect(testutil.CollectAndCount(r.Metrics.FiringLateness)).To(Equal(1))
	h.g.Expect(testutil.ToFloat64(r.Metrics.Runs.WithLabelValues("Succeeded"))).To(Equal(1.0))
	h.g.Expect(testutil.GatherAndCount(registry, "cnat_ats")).To(Equal(5), "one series per phase")
}
