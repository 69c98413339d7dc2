package manifests

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubectlapply "k8s.io/kubectl/pkg/cmd/apply"
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
		got := ApplySetID(tc.name, tc.namespace, tc.gvk.Kind, tc.gvk.Group)
		want := kubectlID(tc.name, tc.namespace, tc.gvk, tc.resource)
		if got != want {
			t.Errorf("ApplySetID(%s, %s, %s) = %s, kubectl says %s", tc.name, tc.namespace, tc.gvk.Kind, got, want)
		}
		if len(got) > 63 || !strings.HasPrefix(got, "applyset-") || !strings.HasSuffix(got, "-v1") {
			t.Errorf("%s is not a valid id label value", got)
		}
	}
	// A fixed value, so that a change of formula is noticed even if kubectl
	// changed the same way: base64url(sha256("applyset-cnat-local.default.Secret.")).
	if got, want := ApplySetID("applyset-cnat-local", "default", "Secret", ""), goldenLocalID; got != want {
		t.Errorf("id of the local set = %s, want %s", got, want)
	}
}

const goldenLocalID = "applyset-PCNDaNOEJYgIjIaoly_MBLpsgoxLEX6NG5GkUPeHDOk-v1"

func TestNewApplySet(t *testing.T) {
	s, err := NewApplySet("local", "", "v1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	if s.ParentName != "applyset-cnat-local" || s.Namespace != DefaultInventoryNamespace || s.Tooling != "cnatctl/v1.2.3" {
		t.Errorf("got %+v", s)
	}
	if s.ID != ApplySetID("applyset-cnat-local", "default", "Secret", "") {
		t.Errorf("id %s", s.ID)
	}
	if _, err := NewApplySet("Not_Valid", "", "v1"); err == nil {
		t.Error("invalid name accepted")
	}
	if _, err := NewApplySet("", "", "v1"); err == nil {
		t.Error("empty name accepted")
	}
}

func TestSetNameFromDir(t *testing.T) {
	for dir, want := range map[string]string{
		"kustomize/overlays/local":  "local",
		"kustomize/overlays/local/": "local",
		"/tmp/My_Overlay":           "my-overlay",
		"testdata/prune/v1":         "v1",
	} {
		if got := SetNameFromDir(dir); got != want {
			t.Errorf("SetNameFromDir(%q) = %q, want %q", dir, got, want)
		}
	}
}

func TestLabelRefusesAnotherSet(t *testing.T) {
	s, _ := NewApplySet("a", "", "v1")
	mine := &unstructured.Unstructured{}
	mine.SetAPIVersion("v1")
	mine.SetKind("ConfigMap")
	mine.SetName("mine")
	theirs := mine.DeepCopy()
	theirs.SetName("theirs")
	theirs.SetLabels(map[string]string{LabelApplySetPartOf: "applyset-other-v1"})
	problems := s.label([]*unstructured.Unstructured{mine, theirs})
	if len(problems) != 1 || problems[0].Object != "ConfigMap/theirs" {
		t.Errorf("problems = %v", problems)
	}
	if mine.GetLabels()[LabelApplySetPartOf] != s.ID {
		t.Errorf("labels = %v", mine.GetLabels())
	}
}
