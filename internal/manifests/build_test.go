package manifests

import (
	"bytes"
	"path/filepath"
	"testing"

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
			objects, err := Build(tc.dir)
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
			y, err := BuildYAML(tc.dir)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(bytes.Count(y, []byte("\n---\n"))+1).To(Equal(len(objects)), "BuildYAML's documents against Build's objects")
		})
	}
}

func TestBuildTestOverlay(t *testing.T) {
	g := NewWithT(t)
	objects, err := Build(filepath.Join("testdata", "lifecycle"))
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
			_, err := Build(tc.dir)
			for _, w := range tc.want {
				g.Expect(err).To(MatchError(ContainSubstring(w)))
			}
			_, err = BuildYAML(tc.dir)
			g.Expect(err).To(HaveOccurred(), "BuildYAML")
		})
	}
}
