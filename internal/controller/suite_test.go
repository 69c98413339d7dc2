package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/atpod"
	"github.com/programming-kubernetes/cnat/test/testenv"
)

// The suite runs the real reconciler against a real kube-apiserver and etcd
// from bin/ (make tools), with the CRD from kustomize/base/crd. Nothing
// plays the kubelet but the tests, which write Pod status themselves.

var (
	testConfig *rest.Config
	testScheme = runtime.NewScheme()
	// apiClient reads and writes straight to the API server.
	apiClient client.WithWatch
)

func TestMain(m *testing.M) {
	logf.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true), zap.Level(zapLevel())))
	if err := clientgoscheme.AddToScheme(testScheme); err != nil {
		panic(err)
	}
	if err := cnatv1beta1.AddToScheme(testScheme); err != nil {
		panic(err)
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "kustomize", "base", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: testenv.BinaryAssetsDirectory(),
	}
	var err error
	if testConfig, err = env.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "starting envtest (kube-apiserver and etcd from %s; run make tools): %v\n", env.BinaryAssetsDirectory, err)
		os.Exit(1)
	}
	if apiClient, err = client.NewWithWatch(testConfig, client.Options{Scheme: testScheme}); err != nil {
		panic(err)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping envtest: %v\n", err)
	}
	os.Exit(code)
}

func zapLevel() zapcore.Level {
	if os.Getenv("CNAT_TEST_DEBUG") != "" {
		return -1
	}
	return 1 // errors only
}

// harness is one test's world: its own namespace, a fake clock, and a
// reconciler whose writes are counted.
type harness struct {
	t        *testing.T
	g        *WithT
	ctx      context.Context
	ns       string
	clock    *clocktesting.FakeClock
	recorder *events.FakeRecorder
	writes   *atomic.Int32
	r        *AtReconciler
}

// start is the fake clock's first reading: a fixed instant, so tests read
// like a timeline.
var start = time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{
		t:        t,
		g:        NewWithT(t),
		ctx:      ctrl.LoggerInto(t.Context(), logf.Log.WithName(t.Name())),
		clock:    clocktesting.NewFakeClock(start),
		recorder: events.NewFakeRecorder(100),
		writes:   &atomic.Int32{},
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}
	h.g.Expect(apiClient.Create(h.ctx, ns)).To(Succeed())
	h.ns = ns.Name
	h.r = h.newReconciler(interceptor.Funcs{})
	return h
}

// newReconciler returns a reconciler of the harness's clock and recorder
// over a client that counts writes and goes through funcs first.
func (h *harness) newReconciler(funcs interceptor.Funcs) *AtReconciler {
	return &AtReconciler{
		Client:    interceptor.NewClient(countingClient(apiClient, h.writes), funcs),
		APIReader: apiClient,
		Clock:     h.clock,
		Recorder:  h.recorder,
		Pods:      atpod.PodOptions{DefaultImage: "busybox:1.37"},
		conflicts: newConflicts(),
	}
}

// countingClient counts every request that writes.
func countingClient(c client.WithWatch, writes *atomic.Int32) client.WithWatch {
	count := func() { writes.Add(1) }
	return interceptor.NewClient(c, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			count()
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			count()
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			count()
			return c.Patch(ctx, obj, patch, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			count()
			return c.Apply(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			count()
			return c.Delete(ctx, obj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			count()
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			count()
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
		SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			count()
			return c.SubResource(sub).Apply(ctx, obj, opts...)
		},
	})
}

// createAt creates an At in the test's namespace.
func (h *harness) createAt(name string, spec cnatv1beta1.AtSpec) *cnatv1beta1.At {
	h.t.Helper()
	at := &cnatv1beta1.At{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns}, Spec: spec}
	h.g.Expect(apiClient.Create(h.ctx, at)).To(Succeed())
	return at
}

// reconcile runs one reconcile of the At and fails the test on error.
func (h *harness) reconcile(name string) ctrl.Result {
	h.t.Helper()
	res, err := h.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: h.ns, Name: name}})
	h.g.Expect(err).NotTo(HaveOccurred())
	return res
}

// at reads the At from the API server.
func (h *harness) at(name string) *cnatv1beta1.At {
	h.t.Helper()
	return h.atWith(h.g, name)
}

// atWith is at asserting with g: inside a poll, the poll's own Gomega, so
// that a failed read is retried rather than failing the test.
func (h *harness) atWith(g Gomega, name string) *cnatv1beta1.At {
	at := &cnatv1beta1.At{}
	g.Expect(apiClient.Get(h.ctx, types.NamespacedName{Namespace: h.ns, Name: name}, at)).To(Succeed())
	return at
}

// pods lists the Pods of the At, from the API server.
func (h *harness) pods(atName string) []corev1.Pod {
	h.t.Helper()
	return h.podsWith(h.g, atName)
}

// podsWith is pods asserting with g, as atWith.
func (h *harness) podsWith(g Gomega, atName string) []corev1.Pod {
	var list corev1.PodList
	g.Expect(apiClient.List(h.ctx, &list, client.InNamespace(h.ns), client.MatchingLabels{cnatv1beta1.LabelAt: atName})).To(Succeed())
	return list.Items
}

// podName is the name of the Pod of attempt of the At atName.
func (h *harness) podName(atName string, attempt int32) string {
	h.t.Helper()
	return atpod.PodName(h.at(atName), attempt)
}

// pod reads a Pod from the API server.
func (h *harness) pod(name string) *corev1.Pod {
	h.t.Helper()
	pod := &corev1.Pod{}
	h.g.Expect(apiClient.Get(h.ctx, types.NamespacedName{Namespace: h.ns, Name: name}, pod)).To(Succeed())
	return pod
}

// histogramCount is how many observations a histogram has.
func histogramCount(g Gomega, h prometheus.Histogram) uint64 {
	m := &dto.Metric{}
	g.Expect(h.Write(m)).To(Succeed())
	return m.GetHistogram().GetSampleCount()
}

// finishPod plays the scheduler and the kubelet: the Pod is on a node, its
// command ran and exited with code.
func (h *harness) finishPod(podName string, code int32) {
	h.t.Helper()
	pod := h.bindPod(podName)
	pod.Status = testenv.TerminatedStatus(pod, code, h.clock.Now())
	h.g.Expect(apiClient.Status().Update(h.ctx, pod)).To(Succeed())
}

// runningAt creates an At due now with a long command and retries left
// (backoffLimit 3), lets the controller start it and see its Pod run, and
// returns the Pod's name.
func (h *harness) runningAt(name string) string {
	h.t.Helper()
	h.createAt(name, cnatv1beta1.AtSpec{Schedule: schedule(start), Command: "sleep 600", BackoffLimit: ptr.To[int32](3)})
	h.reconcile(name)
	podName := h.podName(name, 1)
	h.runPod(podName)
	h.reconcile(name)
	return podName
}

// runPod plays the scheduler and the kubelet: the Pod is on a node and its
// container started.
func (h *harness) runPod(podName string) {
	h.t.Helper()
	pod := h.bindPod(podName)
	pod.Status = testenv.RunningStatus(pod, h.clock.Now())
	h.g.Expect(apiClient.Status().Update(h.ctx, pod)).To(Succeed())
}

// bindPod plays the scheduler: the Pod is bound to a node, unless it is
// already. The API server then deletes it with a grace period while it
// has not finished, as it does a Pod a kubelet runs.
func (h *harness) bindPod(podName string) *corev1.Pod {
	h.t.Helper()
	pod := h.pod(podName)
	if pod.Spec.NodeName == "" {
		binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: podName}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}}
		h.g.Expect(apiClient.SubResource("binding").Create(h.ctx, pod, binding)).To(Succeed())
		pod = h.pod(podName)
	}
	return pod
}

// removeStoppedPod plays the kubelet once a deleted Pod's containers have
// stopped: it deletes the Pod for good (grace period 0), which the API
// server does once the Pod has no finalizer left.
func (h *harness) removeStoppedPod(name string) {
	h.t.Helper()
	err := apiClient.Delete(h.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns}}, client.GracePeriodSeconds(0))
	h.g.Expect(client.IgnoreNotFound(err)).To(Succeed())
}

// events drains the Events recorded so far, as "Type Reason Note" strings.
func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// schedule formats t as an RFC 3339 schedule.
func schedule(t time.Time) string {
	return t.UTC().Format(time.RFC3339)
}
