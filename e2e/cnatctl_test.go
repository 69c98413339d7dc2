//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// cnatctl runs the cnatctl binary (CNATCTL, default bin/cnatctl) against
// the suite's cluster and returns its output and exit code.
func cnatctl(g Gomega, args ...string) (string, int) {
	bin := os.Getenv("CNATCTL")
	if bin == "" {
		bin = filepath.Join("..", "bin", "cnatctl")
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if exit, ok := errors.AsType[*exec.ExitError](err); ok {
		return string(out), exit.ExitCode()
	}
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred(), "running %s", bin)
	return string(out), 0
}

// writeOverlay writes a kustomization of ConfigMaps named after keys.
func writeOverlay(g Gomega, dir, namespace string, configMaps map[string]string) {
	var resources []string
	for name, value := range configMaps {
		file := name + ".yaml"
		resources = append(resources, "  - "+file)
		doc := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  value: %q\n", name, namespace, value)
		g.ExpectWithOffset(1, os.WriteFile(filepath.Join(dir, file), []byte(doc), 0o644)).To(Succeed())
	}
	kustomization := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n" + strings.Join(resources, "\n") + "\n"
	g.ExpectWithOffset(1, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kustomization), 0o644)).To(Succeed())
}

// TestCnatctlDiffApplyPrune is the GitOps round trip a CI pipeline makes:
// apply, drift by someone else, diff says so, apply names the conflict and
// corrects it with --force-conflicts, prune removes what the overlay
// dropped and nothing else.
func TestCnatctlDiffApplyPrune(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := testNamespace(t)
	dir := t.TempDir()
	set := []string{"-k", dir, "--name", ns}
	ctx := context.Background()
	t.Cleanup(func() {
		// The set's ApplySet parent lives outside the test namespace.
		parent := &corev1.Secret{}
		parent.Name, parent.Namespace = "applyset-cnat-"+ns, "default"
		_ = admin.Delete(context.Background(), parent)
	})

	writeOverlay(g, dir, ns, map[string]string{"greeting": "hello", "farewell": "bye"})
	out, code := cnatctl(g, append([]string{"apply", "--prune"}, set...)...)
	g.Expect(code).To(Equal(0), out)
	g.Expect(out).To(ContainSubstring("ConfigMap/" + ns + "/greeting created"))

	out, code = cnatctl(g, append([]string{"diff"}, set...)...)
	g.Expect(code).To(Equal(0), "no drift right after apply: %s", out)

	// Someone edits a value by hand.
	cm := &corev1.ConfigMap{}
	g.Expect(admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "greeting"}, cm)).To(Succeed())
	cm.Data["value"] = "hacked"
	g.Expect(admin.Update(ctx, cm, client.FieldOwner("someone-by-hand"))).To(Succeed())
	out, code = cnatctl(g, append([]string{"diff"}, set...)...)
	g.Expect(code).To(Equal(1), "drift: %s", out)
	g.Expect(out).To(ContainSubstring("ConfigMap/" + ns + "/greeting configured"))
	g.Expect(out).To(ContainSubstring(`.data.value (owned by "someone-by-hand")`))

	// The hand-made value is another manager's field: named, and taken
	// only when told so.
	out, code = cnatctl(g, append([]string{"apply", "--prune"}, set...)...)
	g.Expect(code).To(Equal(2), out)
	g.Expect(out).To(ContainSubstring("--force-conflicts"))
	out, code = cnatctl(g, append([]string{"apply", "--prune", "--force-conflicts"}, set...)...)
	g.Expect(code).To(Equal(0), out)
	g.Expect(admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "greeting"}, cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKeyWithValue("value", "hello"))

	// A ConfigMap that is not the set's, and one the overlay drops.
	bystander := &corev1.ConfigMap{}
	bystander.Name, bystander.Namespace = "bystander", ns
	g.Expect(admin.Create(ctx, bystander)).To(Succeed())
	writeOverlay(g, dir, ns, map[string]string{"greeting": "hello"})
	g.Expect(os.Remove(filepath.Join(dir, "farewell.yaml"))).To(Succeed())
	out, code = cnatctl(g, append([]string{"apply", "--prune"}, set...)...)
	g.Expect(code).To(Equal(0), out)
	g.Expect(out).To(ContainSubstring("ConfigMap/" + ns + "/farewell deleted"))
	err := admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "farewell"}, &corev1.ConfigMap{})
	g.Expect(err).To(Satisfy(apierrors.IsNotFound), "pruned")
	g.Expect(admin.Get(ctx, types.NamespacedName{Namespace: ns, Name: "bystander"}, &corev1.ConfigMap{})).To(Succeed(), "not the set's: kept")
}

// TestCnatctlAt is the everyday command: run this in two seconds, then
// read what it printed.
func TestCnatctlAt(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := testNamespace(t)
	out, code := cnatctl(g, "at", "+2s", "--name", "quick", "--namespace", ns, "--", "echo", "hi")
	g.Expect(code).To(Equal(0), out)
	g.Expect(out).To(ContainSubstring("at/quick created, runs at"))
	g.Eventually(phaseOf(ns, "quick"), timeout).Should(Equal(cnatv1beta1.PhaseSucceeded))

	out, code = cnatctl(g, "get", "quick", "--namespace", ns)
	g.Expect(code).To(Equal(0), out)
	g.Expect(out).To(ContainSubstring("Succeeded"))

	// No placement of its own: under make e2e-real it ran on the real node,
	// and its output is there to read.
	pods := podsOf(g, ns, "quick")
	g.Expect(pods).To(HaveLen(1))
	expectOnTestNodes(g, pods[0], false)
	if testNodes() == "real" {
		out, code = cnatctl(g, "logs", "quick", "--namespace", ns)
		g.Expect(code).To(Equal(0), out)
		g.Expect(out).To(Equal("hi\n"))
	}

	out, code = cnatctl(g, "at", "tomorrow", "--namespace", ns, "--", "echo")
	g.Expect(code).To(Equal(2), "a time it cannot read is an error: %s", out)
}
