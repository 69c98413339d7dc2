package manifests

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func secret(data, stringData map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "s", "namespace": "ns"},
	}}
	if data != nil {
		u.Object["data"] = data
	}
	if stringData != nil {
		u.Object["stringData"] = stringData
	}
	return u
}

func TestUnifiedDiffMasksSecrets(t *testing.T) {
	// A new Secret: every value masked.
	d, err := unifiedDiff("Secret/ns/s", nil, secret(map[string]any{"token": "c2VjcmV0"}, map[string]any{"password": "hunter2"}))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(d, "c2VjcmV0") || strings.Contains(d, "hunter2") || !strings.Contains(d, "+  token: '***'") || !strings.Contains(d, "--- /dev/null") {
		t.Errorf("new Secret:\n%s", d)
	}
	// A changed Secret: the change shows, the values do not.
	d, err = unifiedDiff("Secret/ns/s", secret(map[string]any{"token": "b2xk", "same": "eA=="}, nil), secret(map[string]any{"token": "bmV3", "same": "eA=="}, nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, leaked := range []string{"b2xk", "bmV3", "eA=="} {
		if strings.Contains(d, leaked) {
			t.Errorf("diff shows %s:\n%s", leaked, d)
		}
	}
	if !strings.Contains(d, "-  token: '*** (before)'") || !strings.Contains(d, "+  token: '*** (after)'") {
		t.Errorf("changed Secret:\n%s", d)
	}
	// Anything else is shown as is.
	cm := func(v string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}, "data": map[string]any{"k": v}}}
	}
	d, err = unifiedDiff("ConfigMap/c", cm("old"), cm("new"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d, "--- live/ConfigMap/c\n+++ applied/ConfigMap/c\n") || !strings.Contains(d, "-  k: old\n+  k: new\n") {
		t.Errorf("ConfigMap:\n%s", d)
	}
}
