package manifests

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	. "github.com/onsi/gomega"
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
	g := NewWithT(t)
	// A new Secret: every value masked.
	d, err := unifiedDiff("Secret/ns/s", nil, secret(map[string]any{"token": "c2VjcmV0"}, map[string]any{"password": "hunter2"}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d).NotTo(ContainSubstring("c2VjcmV0"))
	g.Expect(d).NotTo(ContainSubstring("hunter2"))
	g.Expect(d).To(ContainSubstring("+  token: '***'"))
	g.Expect(d).To(ContainSubstring("--- /dev/null"))
	// A changed Secret: the change shows, the values do not.
	d, err = unifiedDiff("Secret/ns/s", secret(map[string]any{"token": "b2xk", "same": "eA=="}, nil), secret(map[string]any{"token": "bmV3", "same": "eA=="}, nil))
	g.Expect(err).NotTo(HaveOccurred())
	for _, leaked := range []string{"b2xk", "bmV3", "eA=="} {
		g.Expect(d).NotTo(ContainSubstring(leaked))
	}
	g.Expect(d).To(ContainSubstring("-  token: '*** (before)'"))
	g.Expect(d).To(ContainSubstring("+  token: '*** (after)'"))
	// Anything else is shown as is.
	cm := func(v string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}, "data": map[string]any{"k": v}}}
	}
	d, err = unifiedDiff("ConfigMap/c", cm("old"), cm("new"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d).To(ContainSubstring("--- live/ConfigMap/c\n+++ applied/ConfigMap/c\n"))
	g.Expect(d).To(ContainSubstring("-  k: old\n+  k: new\n"))
}
