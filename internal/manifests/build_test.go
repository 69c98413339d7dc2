package manifests

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
			objects, err := Build(tc.dir)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			got := kinds(objects)
			for _, k := range tc.want {
				if got[k] == 0 {
					t.Errorf("no %s in %v", k, got)
				}
			}
			for _, k := range tc.none {
				if got[k] != 0 {
					t.Errorf("%d %s, want none", got[k], k)
				}
			}
			for _, o := range objects {
				if o.GetKind() == "CustomResourceDefinition" && o.GetName() != "ats.cnat.programming-kubernetes.info" {
					t.Errorf("unexpected CRD %s", o.GetName())
				}
			}
			y, err := BuildYAML(tc.dir)
			if err != nil {
				t.Fatalf("BuildYAML: %v", err)
			}
			if docs := bytes.Count(y, []byte("\n---\n")) + 1; docs != len(objects) {
				t.Errorf("BuildYAML has %d documents, Build %d objects", docs, len(objects))
			}
		})
	}
}

func TestBuildTestOverlay(t *testing.T) {
	objects, err := Build(filepath.Join("testdata", "lifecycle"))
	if err != nil {
		t.Fatal(err)
	}
	got := kinds(objects)
	for k, n := range map[string]int{"Namespace": 1, "CustomResourceDefinition": 1, "Widget": 1, "ConfigMap": 2, "Deployment": 1} {
		if got[k] != n {
			t.Errorf("%d %s, want %d (all: %v)", got[k], k, n, got)
		}
	}
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
			_, err := Build(tc.dir)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if _, err := BuildYAML(tc.dir); err == nil {
				t.Error("BuildYAML: no error")
			}
		})
	}
}
