package manifests

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	. "github.com/onsi/gomega"

	"github.com/programming-kubernetes/cnat/test/testenv"
)

// The integration tests run the Applier against a real kube-apiserver and
// etcd from bin/ (make tools) or $KUBEBUILDER_ASSETS. There is no
// controller-manager: Deployments never become ready, namespaces are never
// finalized, nothing is garbage-collected.

var (
	testConfig *rest.Config
	testClient client.Client
)

func TestMain(m *testing.M) {
	env := &envtest.Environment{BinaryAssetsDirectory: testenv.BinaryAssetsDirectory()}
	var err error
	if testConfig, err = env.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "starting envtest (kube-apiserver and etcd from %s; run make tools): %v\n", env.BinaryAssetsDirectory, err)
		os.Exit(1)
	}
	if testClient, err = client.New(testConfig, client.Options{Scheme: clientgoscheme.Scheme}); err != nil {
		panic(err)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping envtest: %v\n", err)
	}
	os.Exit(code)
}

// harness is an Applier of one set, printing into out.
type harness struct {
	t   *testing.T
	g   *WithT
	ctx context.Context
	a   *Applier
	set *ApplySet
	out *bytes.Buffer
}

func newHarness(t *testing.T, setName string) *harness {
	t.Helper()
	g := NewWithT(t)
	set, err := NewApplySet(setName, "", "v0.0.0-test")
	g.Expect(err).NotTo(HaveOccurred())
	out := &bytes.Buffer{}
	a, err := NewApplier(testConfig, Options{Set: set, Out: out, ProgressInterval: time.Second, PollInterval: 200 * time.Millisecond})
	g.Expect(err).NotTo(HaveOccurred())
	return &harness{t: t, g: g, ctx: t.Context(), a: a, set: set, out: out}
}

func (h *harness) build(dir ...string) []*unstructured.Unstructured {
	h.t.Helper()
	objects, err := Build(h.ctx, filepath.Join(append([]string{"testdata"}, dir...)...))
	h.g.Expect(err).NotTo(HaveOccurred())
	return objects
}

// apply applies and fails the test on error; it returns the output.
func (h *harness) apply(objects []*unstructured.Unstructured, opts ApplyOptions) (*Result, string) {
	h.t.Helper()
	h.out.Reset()
	if opts.Timeout == 0 {
		opts.Timeout = 30 * time.Second
	}
	res, err := h.a.Apply(h.ctx, objects, opts)
	h.g.Expect(err).NotTo(HaveOccurred(), "Apply output:\n%s", h.out)
	h.t.Logf("apply output:\n%s", h.out)
	return res, h.out.String()
}

func (h *harness) diff(objects []*unstructured.Unstructured, opts DiffOptions) (*DiffResult, string) {
	h.t.Helper()
	h.out.Reset()
	res, err := h.a.Diff(h.ctx, objects, opts)
	h.g.Expect(err).NotTo(HaveOccurred(), "Diff output:\n%s", h.out)
	h.t.Logf("diff output:\n%s", h.out)
	return res, h.out.String()
}

func (h *harness) createNamespace(name string) {
	h.t.Helper()
	err := testClient.Create(h.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if !apierrors.IsAlreadyExists(err) {
		h.g.Expect(err).NotTo(HaveOccurred())
	}
}

// get reads the object o names from the cluster.
func (h *harness) get(o *unstructured.Unstructured) *unstructured.Unstructured {
	h.t.Helper()
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(o.GroupVersionKind())
	h.g.Expect(testClient.Get(h.ctx, client.ObjectKeyFromObject(o), live)).To(Succeed(), "getting %s", Ref(o))
	return live
}

func (h *harness) parent() *corev1.Secret {
	h.t.Helper()
	s := &corev1.Secret{}
	h.g.Expect(testClient.Get(h.ctx, client.ObjectKey{Namespace: h.set.Namespace, Name: h.set.ParentName}, s)).To(Succeed(), "getting the parent")
	return s
}

func actions(entries []Entry) map[string]string {
	out := map[string]string{}
	for _, e := range entries {
		out[e.Ref] = e.Action
	}
	return out
}

func diffActions(entries []DiffEntry) map[string]string {
	out := map[string]string{}
	for _, e := range entries {
		out[e.Ref] = e.Action
	}
	return out
}

func find(objects []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objects {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	panic("no " + kind + " " + name)
}
