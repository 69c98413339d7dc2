package manifests

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	. "github.com/onsi/gomega"
)

// TestGuardedPath: a conflict on an admission field, as the API server
// names it, is cnatctl's to set back, not a conflict to report; any other
// field, and every field of another kind, is.
func TestGuardedPath(t *testing.T) {
	webhooks := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
		"metadata": map[string]any{"name": "w"},
		"webhooks": []any{map[string]any{"name": "vat.cnat.example.com"}},
	}}
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
		"metadata": map[string]any{"name": "b"},
	}}
	configMap := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}}}
	for _, tc := range []struct {
		o       *unstructured.Unstructured
		field   string
		guarded bool
	}{
		{webhooks, `.webhooks[name="vat.cnat.example.com"].namespaceSelector`, true},
		{webhooks, `.webhooks[name="vat.cnat.example.com"].namespaceSelector.matchLabels.team`, true},
		{webhooks, `.webhooks[name="vat.cnat.example.com"].rules`, true},
		{webhooks, `.webhooks[name="vat.cnat.example.com"].matchConditions[name="not-kube-system"].expression`, true},
		{webhooks, `.webhooks[name="vat.cnat.example.com"].failurePolicy`, true},
		{webhooks, `.webhooks[name="vat.cnat.example.com"].matchPolicy`, true},
		{webhooks, `.webhooks[name="vat.cnat.example.com"].objectSelector`, true},
		{webhooks, `.webhooks[name="vat.cnat.example.com"].clientConfig.caBundle`, false},
		{webhooks, `.webhooks[name="vat.cnat.example.com"].timeoutSeconds`, false},
		{webhooks, `.webhooks[name="vat.cnat.example.com"].rulesExtra`, false},
		{webhooks, `.metadata.labels.team`, false},
		{binding, `.spec`, true},
		{binding, `.spec.matchResources.namespaceSelector`, true},
		{binding, `.specs`, false},
		{binding, `.metadata.annotations.note`, false},
		{configMap, `.spec`, false},
		{configMap, `.data.v`, false},
	} {
		t.Run(tc.o.GetKind()+tc.field, func(t *testing.T) {
			NewWithT(t).Expect(guardedPath(tc.o, tc.field)).To(Equal(tc.guarded))
		})
	}
}
