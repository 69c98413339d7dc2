package manifests

import (
	"context"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubectlapply "k8s.io/kubectl/pkg/cmd/apply"

	. "github.com/onsi/gomega"
)

// kubectlID is the id kubectl's own ApplySet implementation computes for a
// parent.
func kubectlID(name, namespace string, gvk schema.GroupVersionKind, resource string) string {
	parent := &kubectlapply.ApplySetParentRef{
		Name:      name,
		Namespace: namespace,
		RESTMapping: &meta.RESTMapping{
			Resource:         gvk.GroupVersion().WithResource(resource),
			GroupVersionKind: gvk,
			Scope:            meta.RESTScopeNamespace,
		},
	}
	return kubectlapply.NewApplySet(parent, kubectlapply.ApplySetTooling{Name: "kubectl", Version: "v1.36.3"}, nil, nil).ID()
}

func TestApplySetIDMatchesKubectl(t *testing.T) {
	secret := schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	configMap := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	custom := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Inventory"}
	for _, tc := range []struct {
		name, namespace string
		gvk             schema.GroupVersionKind
		resource        string
	}{
		{"applyset-cnat-local", "default", secret, "secrets"},
		{"applyset-cnat-base", "cnat-system", secret, "secrets"},
		{"my-set", "default", configMap, "configmaps"},
		{"inv", "team-a", custom, "inventories"},
	} {
		t.Run(tc.name+"."+tc.namespace, func(t *testing.T) {
			g := NewWithT(t)
			got := ApplySetID(tc.name, tc.namespace, tc.gvk.Kind, tc.gvk.Group)
			g.Expect(got).To(Equal(kubectlID(tc.name, tc.namespace, tc.gvk, tc.resource)), "kubectl's id")
			// A valid label value.
			g.Expect(len(got)).To(BeNumerically("<=", 63))
			g.Expect(got).To(HavePrefix("applyset-"))
			g.Expect(got).To(HaveSuffix("-v1"))
		})
	}
	// A fixed value, so that a change of formula is noticed even if kubectl
	// changed the same way: base64url(sha256("applyset-cnat-local.default.Secret.")).
	g := NewWithT(t)
	g.Expect(ApplySetID("applyset-cnat-local", "default", "Secret", "")).To(Equal(goldenLocalID))
}

const goldenLocalID = "applyset-PCNDaNOEJYgIjIaoly_MBLpsgoxLEX6NG5GkUPeHDOk-v1"

func TestNewApplySet(t *testing.T) {
	g := NewWithT(t)
	s, err := NewApplySet("local", "", "v1.2.3")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.ParentName).To(Equal("applyset-cnat-local"))
	g.Expect(s.Namespace).To(Equal(DefaultInventoryNamespace))
	g.Expect(s.Tooling).To(Equal("cnatctl/v1.2.3"))
	g.Expect(s.ID).To(Equal(ApplySetID("applyset-cnat-local", "default", "Secret", "")))
	_, err = NewApplySet("Not_Valid", "", "v1")
	g.Expect(err).To(HaveOccurred(), "invalid name accepted")
	_, err = NewApplySet("", "", "v1")
	g.Expect(err).To(HaveOccurred(), "empty name accepted")
}

func TestSetNameFromDir(t *testing.T) {
	for dir, want := range map[string]string{
		"kustomize/overlays/local":  "local",
		"kustomize/overlays/local/": "local",
		"/tmp/My_Overlay":           "my-overlay",
		"testdata/prune/v1":         "v1",
	} {
		t.Run(dir, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(SetNameFromDir(dir)).To(Equal(want))
		})
	}
}

// TestDefaultSetName: two overlays that share a directory name are two
// sets; one overlay is one set however it is reached.
func TestDefaultSetName(t *testing.T) {
	g := NewWithT(t)
	ours := filepath.Join("..", "..", "kustomize", "overlays", "production")
	g.Expect(OverlaySource(ours)).To(Equal("kustomize/overlays/production"))
	theirs := filepath.Join(t.TempDir(), "team", "production")
	g.Expect(DefaultSetName(ours)).To(HavePrefix("production-"))
	g.Expect(DefaultSetName(theirs)).To(HavePrefix("production-"))
	g.Expect(DefaultSetName(ours)).NotTo(Equal(DefaultSetName(theirs)))
	g.Expect(DefaultSetName(ours + "/")).To(Equal(DefaultSetName(ours)))
	_, err := NewApplySet(DefaultSetName(ours), "", "v1")
	g.Expect(err).NotTo(HaveOccurred())
}

func TestLabelRefusesAnotherSet(t *testing.T) {
	g := NewWithT(t)
	s, err := NewApplySet("a", "", "v1")
	g.Expect(err).NotTo(HaveOccurred())
	mine := &unstructured.Unstructured{}
	mine.SetAPIVersion("v1")
	mine.SetKind("ConfigMap")
	mine.SetName("mine")
	theirs := mine.DeepCopy()
	theirs.SetName("theirs")
	theirs.SetLabels(map[string]string{LabelApplySetPartOf: "applyset-other-v1"})
	problems := s.label([]*unstructured.Unstructured{mine, theirs})
	g.Expect(problems).To(HaveLen(1))
	g.Expect(problems[0].Object).To(Equal("ConfigMap/theirs"))
	g.Expect(mine.GetLabels()).To(HaveKeyWithValue(LabelApplySetPartOf, s.ID))
}

// A parent written by another tool of the ApplySet specification records
// kinds in the same form however it spelled them: a kind listed twice would
// be listed, and pruned, twice.
func TestReadCanonicalizesKinds(t *testing.T) {
	g := NewWithT(t)
	s, err := NewApplySet("a", "cnat-system", "v1")
	g.Expect(err).NotTo(HaveOccurred())
	parent := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Name: s.ParentName, Namespace: s.Namespace,
		Labels: map[string]string{LabelApplySetID: s.ID},
		Annotations: map[string]string{
			AnnotationApplySetTooling:              ToolingName + "/v0.1.0",
			AnnotationApplySetGroupKinds:           "ConfigMap., Deployment.apps ,ConfigMap,,",
			AnnotationApplySetAdditionalNamespaces: " team-a,team-a",
		},
	}}
	inv, err := s.read(context.Background(), fake.NewClientBuilder().WithObjects(parent).Build())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sets.List(inv.groupKinds)).To(Equal([]string{"ConfigMap", "Deployment.apps"}))
	g.Expect(sets.List(inv.namespaces)).To(Equal([]string{"cnat-system", "team-a"}))
}
