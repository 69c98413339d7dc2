package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/programming-kubernetes/cnat/internal/manifests"
	"github.com/programming-kubernetes/cnat/test/testenv"
)

func TestBuildCommand(t *testing.T) {
	g := NewWithT(t)
	out, _, code := cnatctl(t, "build", "-k", filepath.Join("..", "..", "kustomize", "overlays", "local"))
	g.Expect(code).To(Equal(ExitOK))
	g.Expect(out).To(ContainSubstring("kind: CustomResourceDefinition"))
	g.Expect(out).To(ContainSubstring("name: ats.cnat.programming-kubernetes.info"))
	for dir, want := range map[string]string{
		testdata("does-not-exist"): "kustomization directory does not exist",
		testdata("invalid-yaml"):   "broken.yaml",
	} {
		out, errOut, code := cnatctl(t, "build", "-k", dir)
		g.Expect(code).To(Equal(ExitError), dir)
		g.Expect(out).To(BeEmpty(), "no YAML, no usage: %s", dir)
		g.Expect(errOut).To(ContainSubstring(dir))
		g.Expect(errOut).To(ContainSubstring(want))
	}
}

// TestDiffAndApplyExitCodes: diff says 1 before apply and 0 after; bad input
// exits 2 and applies nothing; kubectl recognises the ApplySet.
func TestDiffAndApplyExitCodes(t *testing.T) {
	g := NewWithT(t)
	dir := testdata("waitset")
	// Without --name, the set is named after the overlay and its path.
	parentName := "applyset-cnat-" + manifests.DefaultSetName(dir)
	parentKey := client.ObjectKey{Namespace: "default", Name: parentName}

	for _, bad := range []string{testdata("does-not-exist"), testdata("invalid-yaml")} {
		for _, cmd := range []string{"diff", "apply"} {
			_, errOut, code := cnatctl(t, cmd, "-k", bad)
			g.Expect(code).To(Equal(ExitError), "%s -k %s", cmd, bad)
			g.Expect(errOut).To(ContainSubstring(bad))
		}
	}
	g.Expect(testClient.Get(t.Context(), parentKey, &corev1.Secret{})).To(Satisfy(apierrors.IsNotFound), "bad input wrote no parent")
	g.Expect(testClient.Get(t.Context(), client.ObjectKey{Name: "cnatctl-wait"}, &corev1.Namespace{})).To(Satisfy(apierrors.IsNotFound), "bad input created nothing")

	out, errOut, code := cnatctl(t, "diff", "-k", dir)
	g.Expect(code).To(Equal(ExitDrift))
	g.Expect(out).To(ContainSubstring("Namespace/cnatctl-wait created\n"))
	g.Expect(errOut).To(BeEmpty(), "drift is said by the exit code, not as an error")
	out, _, code = cnatctl(t, "apply", "-k", dir, "--wait", "--timeout", "30s")
	g.Expect(code).To(Equal(ExitOK))
	g.Expect(out).To(ContainSubstring("ConfigMap/cnatctl-wait/ready created\n"))
	g.Expect(out).To(ContainSubstring("waiting for 1 object to become ready"))
	out, _, code = cnatctl(t, "diff", "-k", dir, "--prune")
	g.Expect(code).To(Equal(ExitOK))
	g.Expect(out).To(ContainSubstring("ConfigMap/cnatctl-wait/ready unchanged\n"))

	parent := &corev1.Secret{}
	g.Expect(testClient.Get(t.Context(), parentKey, parent)).To(Succeed())
	g.Expect(parent.Labels).To(HaveKeyWithValue(manifests.LabelApplySetID, manifests.ApplySetID(parentName, "default", "Secret", "")))
	g.Expect(parent.Annotations).To(HaveKeyWithValue(manifests.AnnotationApplySetTooling, HavePrefix("cnatctl/")))
	g.Expect(parent.Annotations).To(HaveKeyWithValue(manifests.AnnotationSource, "internal/manifests/testdata/waitset"))

	kubectl := filepath.Join(testenv.BinaryAssetsDirectory(), "kubectl")
	_, err := os.Stat(kubectl)
	g.Expect(err).NotTo(HaveOccurred(), "no kubectl in %s (make tools)", testenv.BinaryAssetsDirectory())
	get := exec.Command(kubectl, "--kubeconfig", kubeconfig, "get", "secrets", "-A", "-l", "applyset.kubernetes.io/id", "-o", "name")
	b, err := get.CombinedOutput()
	t.Logf("kubectl get secrets -A -l applyset.kubernetes.io/id:\n%s", b)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(b)).To(ContainSubstring("secret/" + parentName))
	// kubectl reads the parent and refuses to manage another tool's set,
	// naming the tool, as KEP-3659 prescribes.
	apply := exec.Command(kubectl, "--kubeconfig", kubeconfig, "apply", "-n", "default", "--prune", "--applyset=secrets/"+parentName, "--server-side", "-k", dir)
	apply.Env = append(os.Environ(), "KUBECTL_APPLYSET=true")
	b, err = apply.CombinedOutput()
	t.Logf("kubectl apply --applyset: %v\n%s", err, b)
	g.Expect(err).To(HaveOccurred())
	g.Expect(string(b)).To(ContainSubstring(`managed by tooling "cnatctl"`))
}
