package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/programming-kubernetes/cnat/internal/manifests"
	"github.com/programming-kubernetes/cnat/test/testenv"
)

// tooOldModule is the tools module that pins the Kubernetes one minor older
// than manifests.MinimumKubernetesVersion, of which `make test-version-gate`
// builds kube-apiserver into bin/k8s/<version>/.
const tooOldModule = "hack/tools/kubernetes-v1.31"

// TestApplyRefusesARealTooOldAPIServer: against a real kube-apiserver one
// minor older than the minimum — not a server that merely reports an old
// version — cnatctl apply of the kind overlay, the whole of cnat, exits 2
// naming the server's version and the one cnat needs, and the cluster is as
// it was: no CustomResourceDefinition, Namespace or Secret (the ApplySet's
// parent) more or less than before. Skipped, saying how to get it, where
// that kube-apiserver has not been built.
func TestApplyRefusesARealTooOldAPIServer(t *testing.T) {
	g := NewWithT(t)
	goMod, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), tooOldModule, "go.mod"))
	g.Expect(err).NotTo(HaveOccurred())
	pin := regexp.MustCompile(`(?m)^require k8s\.io/kubernetes (v1\.(\d+)\.\d+)$`).FindSubmatch(goMod)
	g.Expect(pin).NotTo(BeNil(), "%s/go.mod pins no k8s.io/kubernetes", tooOldModule)
	tooOld := string(pin[1])
	g.Expect("1."+string(pin[2])).NotTo(Equal(manifests.MinimumKubernetesVersion), "%s pins the minimum itself, not the minor before it", tooOldModule)

	apiserver := filepath.Join(testenv.RepoRoot(), "bin", "k8s", tooOld, "kube-apiserver")
	if _, err := os.Stat(apiserver); err != nil {
		t.Skipf("no kube-apiserver %s at %s: make test-version-gate builds it and runs this test", tooOld, apiserver)
	}

	env := &envtest.Environment{BinaryAssetsDirectory: testenv.BinaryAssetsDirectory()}
	env.ControlPlane.GetAPIServer().Path = apiserver
	cfg, err := env.Start()
	g.Expect(err).NotTo(HaveOccurred(), "starting kube-apiserver %s", tooOld)
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Logf("stopping envtest: %v", err)
		}
	})
	user, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	data, err := user.KubeConfig()
	g.Expect(err).NotTo(HaveOccurred())
	old := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(os.WriteFile(old, data, 0o600)).To(Succeed())

	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	g.Expect(apiextensionsv1.AddToScheme(scheme)).To(Succeed())
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	// What an apply would create: the CRD, the namespace cnat-system and
	// everything in it, the ApplySet's parent Secret.
	state := func() []string {
		var names []string
		var crds apiextensionsv1.CustomResourceDefinitionList
		g.Expect(c.List(t.Context(), &crds)).To(Succeed())
		for _, o := range crds.Items {
			names = append(names, "crd/"+o.Name)
		}
		var namespaces corev1.NamespaceList
		g.Expect(c.List(t.Context(), &namespaces)).To(Succeed())
		for _, o := range namespaces.Items {
			names = append(names, "namespace/"+o.Name)
		}
		var secrets corev1.SecretList
		g.Expect(c.List(t.Context(), &secrets)).To(Succeed())
		for _, o := range secrets.Items {
			names = append(names, "secret/"+o.Namespace+"/"+o.Name)
		}
		return names
	}
	before := state()

	var stdout, stderr bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &stdout, ErrOut: &stderr}
	overlay := filepath.Join(testenv.RepoRoot(), "kustomize", "overlays", "kind")
	code := Main([]string{"cnatctl", "--kubeconfig", old, "--cache-dir", t.TempDir(), "apply", "-k", overlay, "--prune", "--wait"}, streams)
	out, errOut := stdout.String(), stderr.String()
	t.Logf("cnatctl apply -k kustomize/overlays/kind --prune --wait against kube-apiserver %s: exit %d\nstdout:\n%s\nstderr:\n%s", tooOld, code, out, errOut)
	g.Expect(code).To(Equal(ExitError))
	g.Expect(out).To(BeEmpty(), "no object reported")
	g.Expect(errOut).To(ContainSubstring("the cluster runs Kubernetes " + tooOld + "; cnat needs Kubernetes v" + manifests.MinimumKubernetesVersion + " or later"))
	g.Expect(errOut).To(ContainSubstring("nothing was applied"))
	g.Expect(state()).To(Equal(before), "the cluster after the refused apply")
}
