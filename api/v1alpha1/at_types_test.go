package v1alpha1

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// TestSchemasDifferOnlyInPhase reads the generated CRD and holds the two
// versions' schemas to what Convert assumes: the same schema, down to every
// CEL rule, for the metadata, the spec and the whole object, and for the
// status but for phase and outcome (and the rule that ties them). A field
// added to one version's spec or status and not to the other fails here,
// as does a bound or rule that differs; descriptions and the messages of
// rules may differ (the book's examples).
func TestSchemasDifferOnlyInPhase(t *testing.T) {
	g := NewWithT(t)
	raw, err := os.ReadFile(filepath.Join("..", "..", "kustomize", "base", "crd", "bases", "cnat.programming-kubernetes.info_ats.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	crd := &apiextensionsv1.CustomResourceDefinition{}
	g.Expect(yaml.UnmarshalStrict(raw, crd)).To(Succeed())

	schemas := map[string]map[string]any{}
	for _, v := range crd.Spec.Versions {
		g.Expect(v.Schema).NotTo(BeNil())
		schemas[v.Name] = withoutProse(g, v.Schema.OpenAPIV3Schema)
	}
	alpha, beta := schemas["v1alpha1"], schemas["v1beta1"]
	g.Expect(alpha).NotTo(BeNil())
	g.Expect(beta).NotTo(BeNil())

	property := func(schema map[string]any, name string) map[string]any {
		p, ok := schema["properties"].(map[string]any)[name].(map[string]any)
		g.Expect(ok).To(BeTrue(), "the schema has %s", name)
		return p
	}
	for _, name := range []string{"apiVersion", "kind", "metadata", "spec"} {
		g.Expect(property(alpha, name)).To(Equal(property(beta, name)), "%s has the same schema in both versions", name)
	}
	alphaStatus, betaStatus := property(alpha, "status"), property(beta, "status")
	g.Expect(alphaStatus["x-kubernetes-validations"]).To(HaveLen(1), "v1alpha1's status has only the rule of its outcome")
	delete(alphaStatus, "x-kubernetes-validations")
	for _, name := range []string{"phase", "outcome"} {
		delete(alphaStatus["properties"].(map[string]any), name)
		delete(betaStatus["properties"].(map[string]any), name)
	}
	g.Expect(alphaStatus).To(Equal(betaStatus), "status has the same schema in both versions but for phase and outcome")

	delete(alpha["properties"].(map[string]any), "status")
	delete(beta["properties"].(map[string]any), "status")
	g.Expect(alpha).To(Equal(beta), "the object has the same schema and rules in both versions")
}

// withoutProse is schema as a tree of JSON values without its descriptions
// and the messages of its rules.
func withoutProse(g Gomega, schema *apiextensionsv1.JSONSchemaProps) map[string]any {
	raw, err := json.Marshal(schema)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	var tree map[string]any
	g.ExpectWithOffset(1, json.Unmarshal(raw, &tree)).To(Succeed())
	var strip func(any)
	strip = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if _, prose := v["description"].(string); prose {
				delete(v, "description")
			}
			if rules, ok := v["x-kubernetes-validations"].([]any); ok {
				for _, rule := range rules {
					delete(rule.(map[string]any), "message")
				}
			}
			for _, child := range v {
				strip(child)
			}
		case []any:
			for _, child := range v {
				strip(child)
			}
		}
	}
	strip(tree)
	return tree
}
