package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/programming-kubernetes/cnat/internal/manifests"
	"github.com/programming-kubernetes/cnat/internal/testenv"
)

func TestBuildCommand(t *testing.T) {
	out, _, code := cnatctl(t, "build", "-k", filepath.Join("..", "..", "kustomize", "overlays", "local"))
	if code != ExitOK || !strings.Contains(out, "kind: CustomResourceDefinition") || !strings.Contains(out, "name: ats.cnat.programming-kubernetes.info") {
		t.Errorf("build of the local overlay: %d\n%s", code, out)
	}
	for dir, want := range map[string]string{
		testdata("does-not-exist"): "kustomization directory does not exist",
		testdata("invalid-yaml"):   "broken.yaml",
	} {
		out, errOut, code := cnatctl(t, "build", "-k", dir)
		if code != ExitError || out != "" || !strings.Contains(errOut, dir) || !strings.Contains(errOut, want) {
			t.Errorf("build -k %s: %d %q %q", dir, code, out, errOut)
		}
	}
}

// TestDiffAndApplyExitCodes: diff says 1 before apply and 0 after; bad input
// exits 2 and applies nothing; kubectl recognises the ApplySet.
func TestDiffAndApplyExitCodes(t *testing.T) {
	dir := testdata("waitset")
	parentKey := client.ObjectKey{Namespace: "default", Name: "applyset-cnat-waitset"}

	for _, bad := range []string{testdata("does-not-exist"), testdata("invalid-yaml")} {
		for _, cmd := range []string{"diff", "apply"} {
			_, errOut, code := cnatctl(t, cmd, "-k", bad, "--name", "waitset")
			if code != ExitError || !strings.Contains(errOut, bad) {
				t.Errorf("%s -k %s: exit %d, %s", cmd, bad, code, errOut)
			}
		}
	}
	if err := testClient.Get(t.Context(), parentKey, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("bad input wrote the parent: %v", err)
	}
	if err := testClient.Get(t.Context(), client.ObjectKey{Name: "cnatctl-wait"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("bad input created something: %v", err)
	}

	out, _, code := cnatctl(t, "diff", "-k", dir)
	if code != ExitDrift || !strings.Contains(out, "Namespace/cnatctl-wait created\n") {
		t.Errorf("diff before apply: %d\n%s", code, out)
	}
	out, _, code = cnatctl(t, "apply", "-k", dir, "--wait", "--timeout", "30s")
	if code != ExitOK || !strings.Contains(out, "ConfigMap/cnatctl-wait/ready created\n") || !strings.Contains(out, "waiting for 1 object to become ready") {
		t.Errorf("apply: %d\n%s", code, out)
	}
	out, _, code = cnatctl(t, "diff", "-k", dir, "--prune")
	if code != ExitOK || !strings.Contains(out, "ConfigMap/cnatctl-wait/ready unchanged\n") {
		t.Errorf("diff after apply: %d\n%s", code, out)
	}

	parent := &corev1.Secret{}
	if err := testClient.Get(t.Context(), parentKey, parent); err != nil {
		t.Fatalf("no parent: %v", err)
	}
	if parent.Labels[manifests.LabelApplySetID] != manifests.ApplySetID("applyset-cnat-waitset", "default", "Secret", "") ||
		!strings.HasPrefix(parent.Annotations[manifests.AnnotationApplySetTooling], "cnatctl/") {
		t.Errorf("parent %v %v", parent.Labels, parent.Annotations)
	}

	kubectl := filepath.Join(testenv.BinaryAssetsDirectory(), "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		t.Fatalf("no kubectl in %s (make tools): %v", testenv.BinaryAssetsDirectory(), err)
	}
	get := exec.Command(kubectl, "--kubeconfig", kubeconfig, "get", "secrets", "-A", "-l", "applyset.kubernetes.io/id", "-o", "name")
	b, err := get.CombinedOutput()
	t.Logf("kubectl get secrets -A -l applyset.kubernetes.io/id:\n%s", b)
	if err != nil || !strings.Contains(string(b), "secret/applyset-cnat-waitset") {
		t.Errorf("kubectl get secrets -l applyset.kubernetes.io/id: %v\n%s", err, b)
	}
	// kubectl reads the parent and refuses to manage another tool's set,
	// naming the tool, as KEP-3659 prescribes.
	apply := exec.Command(kubectl, "--kubeconfig", kubeconfig, "apply", "-n", "default", "--prune", "--applyset=secrets/applyset-cnat-waitset", "--server-side", "-k", dir)
	apply.Env = append(os.Environ(), "KUBECTL_APPLYSET=true")
	b, err = apply.CombinedOutput()
	t.Logf("kubectl apply --applyset: %v\n%s", err, b)
	if err == nil || !strings.Contains(string(b), `managed by tooling "cnatctl"`) {
		t.Errorf("kubectl apply --applyset: %v\n%s", err, b)
	}
}
