package manifests

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/onsi/gomega"
)

// configMap is a ConfigMap with one key.
func configMap(namespace, name, value string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"data":     map[string]any{"v": value},
	}}
}

// gizmoCRD defines the namespaced kind <kind> in group <group>.
func gizmoCRD(group, kind string) *unstructured.Unstructured {
	plural := strings.ToLower(kind) + "s"
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + "." + group},
		"spec": map[string]any{
			"group": group, "scope": "Namespaced",
			"names": map[string]any{"kind": kind, "listKind": kind + "List", "plural": plural, "singular": strings.ToLower(kind)},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
			}},
		},
	}}
}

// createCRs creates n custom resources of kind in namespace, as users do:
// they belong to no set.
func (h *harness) createCRs(group, kind, namespace string, n int) {
	h.t.Helper()
	for i := range n {
		cr := &unstructured.Unstructured{}
		cr.SetAPIVersion(group + "/v1")
		cr.SetKind(kind)
		cr.SetNamespace(namespace)
		cr.SetName(strings.ToLower(kind) + "-" + string(rune('a'+i)))
		h.g.Eventually(func() error { return testClient.Create(h.ctx, cr) }).WithTimeout(10 * time.Second).Should(Succeed())
	}
}

// TestPruneRefusesAnEmptyRender: an overlay that renders nothing, applied
// with --prune, deletes nothing and says why.
func TestPruneRefusesAnEmptyRender(t *testing.T) {
	g := NewWithT(t)
	h := newHarness(t, "empty")
	h.createNamespace("cnatctl-empty")
	h.apply([]*unstructured.Unstructured{configMap("cnatctl-empty", "kept", "1")}, ApplyOptions{})

	h.out.Reset()
	_, err := h.a.Apply(h.ctx, nil, ApplyOptions{Prune: true, Timeout: 10 * time.Second})
	g.Expect(err).To(MatchError(ContainSubstring("renders no objects")), "output:\n%s", h.out)
	g.Expect(err).To(MatchError(ContainSubstring("nothing was applied")))
	h.get(configMap("cnatctl-empty", "kept", ""))
}

// TestPruneKeepsWhatHoldsData: an overlay that no longer has its
// CustomResourceDefinition and Namespace does not prune them, naming how
// many custom resources would go with the CRD, and applies nothing; with
// DeleteData it does.
func TestPruneKeepsWhatHoldsData(t *testing.T) {
	g := NewWithT(t)
	h := newHarness(t, "data")
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "cnatctl-data"}}}
	crd := gizmoCRD("data.cnatctl.example.com", "Gizmo")
	h.apply([]*unstructured.Unstructured{ns, crd, configMap("cnatctl-data", "a", "1")}, ApplyOptions{})
	h.createCRs("data.cnatctl.example.com", "Gizmo", "cnatctl-data", 2)
	crdUID := h.get(crd).GetUID()

	// Without the CRD and the Namespace (a bad merge): refused, and not even
	// the ConfigMap's new value is applied.
	h.out.Reset()
	_, err := h.a.Apply(h.ctx, []*unstructured.Unstructured{configMap("default", "b", "1")}, ApplyOptions{Prune: true, Timeout: 10 * time.Second})
	t.Logf("error: %v", err)
	g.Expect(err).To(HaveOccurred(), "prune of a CRD went through:\n%s", h.out)
	for _, want := range []string{"CustomResourceDefinition/gizmos.data.cnatctl.example.com", "every Gizmo in the cluster: 2 Gizmos", "Namespace/cnatctl-data", "--delete-data", "nothing was applied"} {
		g.Expect(err).To(MatchError(ContainSubstring(want)))
	}
	g.Expect(h.get(crd).GetUID()).To(Equal(crdUID), "the CRD was deleted")
	h.get(configMap("cnatctl-data", "a", ""))
	err = testClient.Get(h.ctx, client.ObjectKey{Namespace: "default", Name: "b"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "b was applied: %v", err)

	// diff --prune says what apply --prune would do.
	d, out := h.diff([]*unstructured.Unstructured{configMap("default", "b", "1")}, DiffOptions{Prune: true})
	g.Expect(diffActions(d.Entries)).To(HaveKeyWithValue("CustomResourceDefinition/gizmos.data.cnatctl.example.com", "deleted"), out)
	g.Expect(out).To(ContainSubstring("CustomResourceDefinition/gizmos.data.cnatctl.example.com deleted (apply --prune deletes it only with --delete-data, and with it every Gizmo in the cluster: 2 Gizmos)"))

	// Said explicitly: pruned.
	res, out := h.apply([]*unstructured.Unstructured{configMap("default", "b", "1")}, ApplyOptions{Prune: true, DeleteData: true})
	g.Expect(actions(res.Pruned)).To(HaveKeyWithValue("CustomResourceDefinition/gizmos.data.cnatctl.example.com", "deleted"), out)
}

// TestForceKeepsCRDs: --force recreates a Deployment for an immutable
// field, but not a CustomResourceDefinition (here its kind renamed, as a
// bad patch would): that needs DeleteData, and the refusal says how many
// custom resources would go.
func TestForceKeepsCRDs(t *testing.T) {
	g := NewWithT(t)
	h := newHarness(t, "force-crd")
	h.createNamespace("cnatctl-force-crd")
	crd := gizmoCRD("force.cnatctl.example.com", "Gizmo")
	h.apply([]*unstructured.Unstructured{crd}, ApplyOptions{})
	h.createCRs("force.cnatctl.example.com", "Gizmo", "cnatctl-force-crd", 3)
	before := h.get(crd)
	renamed := gizmoCRD("force.cnatctl.example.com", "Gizmo")
	_ = unstructured.SetNestedField(renamed.Object, "Gadget", "spec", "names", "kind")

	d, out := h.diff([]*unstructured.Unstructured{renamed}, DiffOptions{})
	g.Expect(diffActions(d.Entries)).To(HaveKeyWithValue("CustomResourceDefinition/gizmos.force.cnatctl.example.com", ActionRecreated), out)
	g.Expect(out).To(ContainSubstring("--force --delete-data"))
	g.Expect(out).To(ContainSubstring("3 Gizmos"))

	h.out.Reset()
	_, err := h.a.Apply(h.ctx, []*unstructured.Unstructured{renamed}, ApplyOptions{Force: true, Timeout: 10 * time.Second})
	t.Logf("error: %v", err)
	g.Expect(err).To(HaveOccurred(), "--force recreated the CRD:\n%s", h.out)
	for _, want := range []string{"CustomResourceDefinition/gizmos.force.cnatctl.example.com", "3 Gizmos", "--delete-data", "nothing was applied"} {
		g.Expect(err).To(MatchError(ContainSubstring(want)))
	}
	g.Expect(h.get(crd).GetUID()).To(Equal(before.GetUID()), "the CRD was recreated")

	// Said explicitly: recreated, and its custom resources are gone.
	res, out := h.apply([]*unstructured.Unstructured{renamed}, ApplyOptions{Force: true, DeleteData: true})
	g.Expect(actions(res.Applied)).To(HaveKeyWithValue("CustomResourceDefinition/gizmos.force.cnatctl.example.com", ActionRecreated), out)
	g.Expect(h.get(crd).GetUID()).NotTo(Equal(before.GetUID()))
}

// TestDifferentSourceRefused: the parent records the overlay; another
// overlay applied onto the same set is refused and prunes nothing, unless
// ChangeSource says so.
func TestDifferentSourceRefused(t *testing.T) {
	g := NewWithT(t)
	h := newHarness(t, "source")
	h.createNamespace("cnatctl-source")
	h.set.Source = "kustomize/overlays/production"
	h.apply([]*unstructured.Unstructured{configMap("cnatctl-source", "cnat", "1")}, ApplyOptions{Prune: true})
	g.Expect(h.parent().Annotations).To(HaveKeyWithValue(AnnotationSource, "kustomize/overlays/production"))
	g.Expect(h.parent().Annotations).To(HaveKeyWithValue(AnnotationApplySetTooling, "cnatctl/v0.0.0-test"))

	h.set.Source = "team/deploy/production"
	h.out.Reset()
	_, err := h.a.Apply(h.ctx, []*unstructured.Unstructured{configMap("cnatctl-source", "team", "1")}, ApplyOptions{Prune: true, Timeout: 10 * time.Second})
	t.Logf("error: %v", err)
	for _, want := range []string{"kustomize/overlays/production", "team/deploy/production", "--change-source", "nothing was applied"} {
		g.Expect(err).To(MatchError(ContainSubstring(want)))
	}
	h.get(configMap("cnatctl-source", "cnat", ""))
	d, out := h.diff([]*unstructured.Unstructured{configMap("cnatctl-source", "team", "1")}, DiffOptions{Prune: true})
	g.Expect(d.Drift).To(BeTrue())
	g.Expect(out).To(ContainSubstring("--change-source"), "diff --prune does not say the set came from elsewhere")

	res, out := h.apply([]*unstructured.Unstructured{configMap("cnatctl-source", "team", "1")}, ApplyOptions{Prune: true, ChangeSource: true})
	g.Expect(actions(res.Pruned)).To(HaveKeyWithValue("ConfigMap/cnatctl-source/cnat", "deleted"), out)
	g.Expect(h.parent().Annotations).To(HaveKeyWithValue(AnnotationSource, "team/deploy/production"))
}

// TestConflictsAreSaid: a field that another manager owns with another
// value is named with its manager by diff and apply, and apply takes it
// only with ForceConflicts.
func TestConflictsAreSaid(t *testing.T) {
	g := NewWithT(t)
	h := newHarness(t, "conflict")
	h.createNamespace("cnatctl-conflict")
	h.apply([]*unstructured.Unstructured{configMap("cnatctl-conflict", "shared", "ours")}, ApplyOptions{})
	theirs := configMap("cnatctl-conflict", "shared", "theirs")
	g.Expect(testClient.Apply(h.ctx, client.ApplyConfigurationFromUnstructured(theirs), client.FieldOwner("kustomize-controller"), client.ForceOwnership)).To(Succeed())

	d, out := h.diff([]*unstructured.Unstructured{configMap("cnatctl-conflict", "shared", "ours")}, DiffOptions{})
	g.Expect(d.Drift).To(BeTrue())
	g.Expect(out).To(ContainSubstring(`.data.v (owned by "kustomize-controller")`))
	g.Expect(out).To(ContainSubstring("--force-conflicts"))

	h.out.Reset()
	_, err := h.a.Apply(h.ctx, []*unstructured.Unstructured{configMap("cnatctl-conflict", "shared", "ours")}, ApplyOptions{Timeout: 10 * time.Second})
	t.Logf("error: %v", err)
	for _, want := range []string{"ConfigMap/cnatctl-conflict/shared", `.data.v (owned by "kustomize-controller")`, "--force-conflicts", "nothing was applied"} {
		g.Expect(err).To(MatchError(ContainSubstring(want)))
	}
	v, _, _ := unstructured.NestedString(h.get(theirs).Object, "data", "v")
	g.Expect(v).To(Equal("theirs"), "the field was taken")

	h.apply([]*unstructured.Unstructured{configMap("cnatctl-conflict", "shared", "ours")}, ApplyOptions{ForceConflicts: true})
	v, _, _ = unstructured.NestedString(h.get(theirs).Object, "data", "v")
	g.Expect(v).To(Equal("ours"))
}

// TestAdmissionDrift: a namespaceSelector that matches nothing, added by
// hand to cnat's validating webhook and to the Pod-claim policy's binding
// (both leave it unset), is drift that diff reports and apply sets back.
func TestAdmissionDrift(t *testing.T) {
	g := NewWithT(t)
	h := newHarness(t, "admission")
	h.createNamespace("cnat-system")
	var objects []*unstructured.Unstructured
	for _, dir := range []string{"webhook", "policy"} {
		objs, err := Build(h.ctx, filepath.Join("..", "..", "kustomize", "base", dir))
		g.Expect(err).NotTo(HaveOccurred())
		objects = append(objects, objs...)
	}
	h.apply(objects, ApplyOptions{})
	nothing := map[string]any{"matchLabels": map[string]any{"matches": "nothing"}}

	webhook := h.get(find(objects, "ValidatingWebhookConfiguration", "cnat-validating-webhook-configuration"))
	webhooks, _, _ := unstructured.NestedSlice(webhook.Object, "webhooks")
	webhooks[0].(map[string]any)["namespaceSelector"] = nothing
	g.Expect(unstructured.SetNestedSlice(webhook.Object, webhooks, "webhooks")).To(Succeed())
	g.Expect(testClient.Update(h.ctx, webhook, client.FieldOwner("kubectl-edit"))).To(Succeed())
	binding := h.get(find(objects, "ValidatingAdmissionPolicyBinding", "cnat-pod-claims"))
	g.Expect(unstructured.SetNestedField(binding.Object, nothing, "spec", "matchResources", "namespaceSelector")).To(Succeed())
	g.Expect(testClient.Update(h.ctx, binding, client.FieldOwner("kubectl-edit"))).To(Succeed())

	d, out := h.diff(objects, DiffOptions{})
	g.Expect(d.Drift).To(BeTrue(), "diff:\n%s", out)
	g.Expect(diffActions(d.Entries)).To(HaveKeyWithValue("ValidatingWebhookConfiguration/cnat-validating-webhook-configuration", "configured"), out)
	g.Expect(diffActions(d.Entries)).To(HaveKeyWithValue("ValidatingAdmissionPolicyBinding/cnat-pod-claims", "configured"), out)
	g.Expect(out).To(ContainSubstring("namespaceSelector"))

	res, out := h.apply(objects, ApplyOptions{})
	g.Expect(actions(res.Applied)).To(HaveKeyWithValue("ValidatingWebhookConfiguration/cnat-validating-webhook-configuration", "configured"), out)
	g.Expect(actions(res.Applied)).To(HaveKeyWithValue("ValidatingAdmissionPolicyBinding/cnat-pod-claims", "configured"), out)
	webhooks, _, _ = unstructured.NestedSlice(h.get(webhook).Object, "webhooks")
	g.Expect(webhooks[0].(map[string]any)["namespaceSelector"]).To(BeEmpty(), "the webhook's selector is still there")
	sel, _, _ := unstructured.NestedMap(h.get(binding).Object, "spec", "matchResources", "namespaceSelector")
	g.Expect(sel).To(BeEmpty(), "the binding's selector is still there")
	d, out = h.diff(objects, DiffOptions{})
	g.Expect(d.Drift).To(BeFalse(), "drift after apply:\n%s", out)
}

// TestSecondApplyWaits: while another cnatctl holds the set's Lease, an
// apply waits for it, and fails naming the holder when it does not end in
// time; it changes nothing meanwhile.
func TestSecondApplyWaits(t *testing.T) {
	g := NewWithT(t)
	h := newHarness(t, "lock")
	h.createNamespace("cnatctl-lock")
	h.apply([]*unstructured.Unstructured{configMap("cnatctl-lock", "a", "1")}, ApplyOptions{})
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: h.set.Namespace, Name: h.set.ParentName},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("ci-job-1"), LeaseDurationSeconds: ptr.To(int32(3600)), AcquireTime: &now, RenewTime: &now},
	}
	g.Expect(testClient.Create(h.ctx, lease)).To(Succeed())

	h.out.Reset()
	_, err := h.a.Apply(h.ctx, []*unstructured.Unstructured{configMap("cnatctl-lock", "a", "2")}, ApplyOptions{Prune: true, Timeout: 2 * time.Second})
	t.Logf("error: %v\noutput:\n%s", err, h.out)
	g.Expect(err).To(MatchError(ContainSubstring("ci-job-1")))
	g.Expect(err).To(MatchError(ContainSubstring("nothing was applied")))
	g.Expect(h.out.String()).To(ContainSubstring("waiting for another cnatctl (ci-job-1)"))
	v, _, _ := unstructured.NestedString(h.get(configMap("cnatctl-lock", "a", "")).Object, "data", "v")
	g.Expect(v).To(Equal("1"))

	// The other job ends while this one waits: this one goes on.
	go func() {
		time.Sleep(time.Second)
		_ = testClient.Delete(h.ctx, lease)
	}()
	_, out := h.apply([]*unstructured.Unstructured{configMap("cnatctl-lock", "a", "2")}, ApplyOptions{Prune: true})
	g.Expect(out).To(ContainSubstring("waiting for another cnatctl (ci-job-1)"))
	v, _, _ = unstructured.NestedString(h.get(configMap("cnatctl-lock", "a", "")).Object, "data", "v")
	g.Expect(v).To(Equal("2"))
	err = testClient.Get(h.ctx, client.ObjectKeyFromObject(lease), &coordinationv1.Lease{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the lock was not released: %v", err)
}

// TestTwoAppliesOfOneSetTakeTurns: a second apply of the set that starts
// while the first one waits for its objects waits for it, then applies and
// prunes against what the first one recorded.
func TestTwoAppliesOfOneSetTakeTurns(t *testing.T) {
	g := NewWithT(t)
	first, second := newHarness(t, "turns"), newHarness(t, "turns")
	first.createNamespace("cnatctl-turns")
	neverReady := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "slow", "namespace": "cnatctl-turns"},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"app": "slow"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "slow"}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "busybox:1.37"}}},
			},
		},
	}}
	firstDone := make(chan error, 1)
	go func() {
		// No controller-manager: the Deployment never becomes ready, and the
		// first apply holds the set for its whole --timeout.
		_, err := first.a.Apply(first.ctx, []*unstructured.Unstructured{configMap("cnatctl-turns", "one", "1"), neverReady}, ApplyOptions{Prune: true, Wait: true, Timeout: 4 * time.Second})
		firstDone <- err
	}()
	g.Eventually(func() error {
		return testClient.Get(first.ctx, client.ObjectKey{Namespace: first.set.Namespace, Name: first.set.ParentName}, &coordinationv1.Lease{})
	}).WithTimeout(10*time.Second).Should(Succeed(), "the first apply took no lock")

	start := time.Now()
	res, out := second.apply([]*unstructured.Unstructured{configMap("cnatctl-turns", "two", "1")}, ApplyOptions{Prune: true})
	g.Expect(<-firstDone).To(MatchError(ContainSubstring("Deployment/cnatctl-turns/slow")), "the first apply's wait")
	g.Expect(out).To(ContainSubstring("waiting for another cnatctl"))
	g.Expect(time.Since(start)).To(BeNumerically(">", 2*time.Second), "the second apply did not wait")
	// The second apply pruned what the first recorded, after it was done.
	g.Expect(actions(res.Pruned)).To(BeComparableTo(map[string]string{"ConfigMap/cnatctl-turns/one": "deleted", "Deployment/cnatctl-turns/slow": "deleted"}), out)
}
