package manifests

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	. "github.com/onsi/gomega"
)

// repoDir is a path from the repository root.
func repoDir(parts ...string) string {
	return filepath.Join(append([]string{"..", ".."}, parts...)...)
}

func kinds(objects []*unstructured.Unstructured) map[string]int {
	out := map[string]int{}
	for _, o := range objects {
		out[o.GetKind()]++
	}
	return out
}

func TestBuildRepoOverlays(t *testing.T) {
	for _, tc := range []struct {
		dir  string
		want []string
		none []string
	}{
		{
			dir: repoDir("kustomize", "overlays", "local"),
			want: []string{"Namespace", "CustomResourceDefinition", "ClusterRole", "ServiceAccount",
				"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "Secret"},
			// The controller runs on the host: no Deployment, and the
			// webhook Service is deleted by a patch.
			none: []string{"Deployment", "Service"},
		},
		{
			dir: repoDir("kustomize", "base"),
			want: []string{"Namespace", "CustomResourceDefinition", "ClusterRole", "ServiceAccount",
				"Deployment", "Service", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "Secret"},
		},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			g := NewWithT(t)
			objects, err := Build(t.Context(), tc.dir)
			g.Expect(err).NotTo(HaveOccurred())
			got := kinds(objects)
			for _, k := range tc.want {
				g.Expect(got).To(HaveKeyWithValue(k, BeNumerically(">", 0)), "no %s", k)
			}
			for _, k := range tc.none {
				g.Expect(got).NotTo(HaveKey(k))
			}
			for _, o := range objects {
				if o.GetKind() == "CustomResourceDefinition" {
					g.Expect(o.GetName()).To(Equal("ats.cnat.programming-kubernetes.info"), "unexpected CRD")
				}
			}
			y, err := BuildYAML(t.Context(), tc.dir)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(bytes.Count(y, []byte("\n---\n"))+1).To(Equal(len(objects)), "BuildYAML's documents against Build's objects")
		})
	}
}

func TestBuildTestOverlay(t *testing.T) {
	g := NewWithT(t)
	objects, err := Build(t.Context(), filepath.Join("testdata", "lifecycle"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kinds(objects)).To(BeComparableTo(map[string]int{"Namespace": 1, "CustomResourceDefinition": 1, "Widget": 1, "ConfigMap": 2, "Deployment": 1}))
}

func TestBuildErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		dir  string
		want []string
	}{
		{"missing dir", filepath.Join("testdata", "does-not-exist"), []string{filepath.Join("testdata", "does-not-exist"), "does not exist"}},
		{"a file", filepath.Join("testdata", "README.md"), []string{"README.md", "not a directory"}},
		{"invalid YAML", filepath.Join("testdata", "invalid-yaml"), []string{"invalid-yaml", "broken.yaml"}},
		{"no kustomization", "testdata", []string{"testdata", "kustomization"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Build(t.Context(), tc.dir)
			for _, w := range tc.want {
				g.Expect(err).To(MatchError(ContainSubstring(w)))
			}
			_, err = BuildYAML(t.Context(), tc.dir)
			g.Expect(err).To(HaveOccurred(), "BuildYAML")
		})
	}
}

// overlayWith writes a kustomization of one resource file with content and
// returns its directory.
func overlayWith(t *testing.T, file string, content []byte) string {
	t.Helper()
	dir := t.TempDir()
	g := NewWithT(t)
	g.Expect(os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("resources:\n  - "+file+"\n"), 0o600)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, file), content, 0o600)).To(Succeed())
	return dir
}

// billionLaughs is a ConfigMap whose nested anchors expand to 9^9 values
// from 600 bytes.
func billionLaughs() []byte {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: laughs\nx0: &x0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= 8; i++ {
		fmt.Fprintf(&b, "x%d: &x%d [", i, i)
		for j := range 9 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*x%d", i-1)
		}
		b.WriteString("]\n")
	}
	b.WriteString("data:\n  laughs: *x8\n")
	return []byte(b.String())
}

// TestBuildBoundsItsCost: a file too large or whose aliases expand too far
// is refused before kustomize parses it, naming the file, and at once.
func TestBuildBoundsItsCost(t *testing.T) {
	large := append([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: large\ndata:\n  big: \""), bytes.Repeat([]byte("x"), MaxFileBytes)...)
	large = append(large, "\"\n"...)
	for _, tc := range []struct {
		name, file string
		content    []byte
		want       string
	}{
		{"billion laughs", "laughs.yaml", billionLaughs(), "aliases expand to more than"},
		{"too large", "large.yaml", large, "larger than 8 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			dir := overlayWith(t, tc.file, tc.content)
			start := time.Now()
			_, err := Build(t.Context(), dir)
			g.Expect(err).To(MatchError(ContainSubstring(tc.file)))
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
			g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
		})
	}
	// The repository's overlays are far within the bounds.
	g := NewWithT(t)
	_, err := Build(t.Context(), repoDir("kustomize", "overlays", "production-monitoring"))
	g.Expect(err).NotTo(HaveOccurred())
}

// TestBuildStopsWhenCancelled: a cancelled render (SIGTERM) returns at once
// with the cancellation.
func TestBuildStopsWhenCancelled(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := Build(ctx, repoDir("kustomize", "overlays", "local"))
	g.Expect(err).To(MatchError(context.Canceled))
	g.Expect(err).To(MatchError(ContainSubstring("local")))
}

// TestYAMLNodes: an alias counts as what it stands for, without being
// expanded; what is not YAML counts up to where it stops being YAML.
func TestYAMLNodes(t *testing.T) {
	for content, want := range map[string]int{
		"a: 1\n":                 4, // document, mapping, key, value
		"x: &a [1, 2]\ny: *a\n":  10,
		"---\na: 1\n---\nb: 2\n": 8,
		"{unclosed\n":            0,
	} {
		t.Run(content, func(t *testing.T) {
			NewWithT(t).Expect(yamlNodes([]byte(content))).To(Equal(want))
		})
	}
	NewWithT(t).Expect(yamlNodes(billionLaughs())).To(BeNumerically(">", MaxYAMLNodes))
}
