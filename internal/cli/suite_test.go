package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/test/testenv"
)

// The integration tests run cnatctl's commands, flags and all, against a
// real kube-apiserver and etcd from bin/ (make tools) or
// $KUBEBUILDER_ASSETS, with the At CRD from kustomize/base/crd/bases (no
// webhooks: nothing would serve them) and a kubeconfig written for an admin
// user.

var (
	kubeconfig string
	// cacheDir is the discovery cache of every cnatctl run, so the tests
	// leave nothing in $HOME/.kube.
	cacheDir   string
	testClient client.Client
)

func TestMain(m *testing.M) {
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "kustomize", "base", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: testenv.BinaryAssetsDirectory(),
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting envtest (kube-apiserver and etcd from %s; run make tools): %v\n", env.BinaryAssetsDirectory, err)
		os.Exit(1)
	}
	code := func() int {
		defer func() {
			if err := env.Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "stopping envtest: %v\n", err)
			}
		}()
		user, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		data, err := user.KubeConfig()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		dir, err := os.MkdirTemp("", "cnatctl-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer func() { _ = os.RemoveAll(dir) }()
		kubeconfig, cacheDir = filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "cache")
		if err := os.WriteFile(kubeconfig, data, 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		scheme := runtime.NewScheme()
		_ = clientgoscheme.AddToScheme(scheme)
		_ = cnatv1beta1.AddToScheme(scheme)
		if testClient, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

// run runs cnatctl (as argv0) with args against the test cluster and
// returns stdout, stderr and the exit code.
func run(t *testing.T, argv0 string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	code := Main(append([]string{argv0, "--kubeconfig", kubeconfig, "--cache-dir", cacheDir}, args...), streams)
	t.Logf("%s %s -> %d\nstdout:\n%s\nstderr:\n%s", argv0, strings.Join(args, " "), code, out.String(), errOut.String())
	return out.String(), errOut.String(), code
}

func cnatctl(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return run(t, "cnatctl", args...)
}

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cli-"}}
	NewWithT(t).Expect(testClient.Create(t.Context(), ns)).To(Succeed())
	return ns.Name
}

// testdata is a test overlay of internal/manifests.
func testdata(dir ...string) string {
	return filepath.Join(append([]string{"..", "manifests", "testdata"}, dir...)...)
}
