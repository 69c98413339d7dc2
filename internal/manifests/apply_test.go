package manifests

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/onsi/gomega"
)

// TestLifecycle: a CRD and its CR in one apply; re-apply changes nothing;
// a third field manager's change is drift that diff reports, a conflict
// that apply names, and corrects with ForceConflicts.
func TestLifecycle(t *testing.T) {
	g := NewWithT(t)
	h := newHarness(t, "lifecycle")
	objects := h.build("lifecycle")

	// Before the first apply, diff says everything would be created; the
	// Widget cannot be dry-run before its CRD exists.
	d, out := h.diff(objects, DiffOptions{})
	g.Expect(d.Drift).To(BeTrue(), "no drift before the first apply:\n%s", out)
	g.Expect(diffActions(d.Entries)).To(HaveEach("created"), "diff before apply:\n%s", out)
	g.Expect(out).To(ContainSubstring("Widget/cnatctl-lifecycle/gear created (its CustomResourceDefinition is created by this apply; not dry-run)"))

	res, out := h.apply(objects, ApplyOptions{})
	g.Expect(actions(res.Applied)).To(BeComparableTo(map[string]string{
		"Namespace/cnatctl-lifecycle":                          "created",
		"CustomResourceDefinition/widgets.cnatctl.example.com": "created",
		"Widget/cnatctl-lifecycle/gear":                        "created",
		"ConfigMap/cnatctl-lifecycle/settings":                 "created",
		"ConfigMap/cnatctl-lifecycle/extra":                    "created",
		"Deployment/cnatctl-lifecycle/web":                     "created",
	}), "first apply:\n%s", out)
	// CRDs and Namespaces come first, and are waited for.
	g.Expect(out).To(HavePrefix("CustomResourceDefinition/widgets.cnatctl.example.com created\nNamespace/cnatctl-lifecycle created\nwaiting for CustomResourceDefinitions and Namespaces (2 objects)"), "stage 1 not first")
	widget := h.get(find(objects, "Widget", "gear"))
	size, _, _ := unstructured.NestedInt64(widget.Object, "spec", "size")
	g.Expect(size).To(Equal(int64(3)))

	// Every member carries the set's id; the parent records kinds and
	// namespaces.
	rvs := map[string]string{}
	for _, o := range objects {
		live := h.get(o)
		g.Expect(live.GetLabels()).To(HaveKeyWithValue(LabelApplySetPartOf, h.set.ID), Ref(o))
		rvs[Ref(o)] = live.GetResourceVersion()
	}
	parent := h.parent()
	g.Expect(parent.Labels).To(HaveKeyWithValue(LabelApplySetID, h.set.ID))
	g.Expect(parent.Annotations).To(HaveKeyWithValue(AnnotationApplySetTooling, "cnatctl/v0.0.0-test"))
	g.Expect(parent.Annotations).To(HaveKeyWithValue(AnnotationApplySetGroupKinds, "ConfigMap,CustomResourceDefinition.apiextensions.k8s.io,Deployment.apps,Namespace,Widget.cnatctl.example.com"))
	g.Expect(parent.Annotations).To(HaveKeyWithValue(AnnotationApplySetAdditionalNamespaces, "cnatctl-lifecycle"))
	parentRV := parent.ResourceVersion

	// Re-apply: everything unchanged, not one write.
	res, out = h.apply(h.build("lifecycle"), ApplyOptions{})
	g.Expect(actions(res.Applied)).To(HaveEach("unchanged"), "re-apply:\n%s", out)
	for _, o := range objects {
		g.Expect(h.get(o).GetResourceVersion()).To(Equal(rvs[Ref(o)]), "re-apply changed %s", Ref(o))
	}
	g.Expect(h.parent().ResourceVersion).To(Equal(parentRV), "re-apply rewrote the parent")
	d, out = h.diff(objects, DiffOptions{})
	g.Expect(d.Drift).To(BeFalse(), "drift right after apply:\n%s", out)

	// A third field manager changes a value.
	cm := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: "cnatctl-lifecycle", Name: "settings"}
	g.Expect(testClient.Get(h.ctx, key, cm)).To(Succeed())
	cm.Data["greeting"] = "intruded"
	g.Expect(testClient.Update(h.ctx, cm, client.FieldOwner("intruder"))).To(Succeed())

	d, out = h.diff(objects, DiffOptions{Verbose: true})
	g.Expect(d.Drift).To(BeTrue(), "diff does not see the intruder:\n%s", out)
	want := map[string]string{}
	for _, o := range objects {
		want[Ref(o)] = "unchanged"
	}
	want["ConfigMap/cnatctl-lifecycle/settings"] = "configured"
	g.Expect(diffActions(d.Entries)).To(BeComparableTo(want))
	g.Expect(out).To(ContainSubstring("-  greeting: intruded\n"), "verbose diff does not show the change")
	g.Expect(out).To(ContainSubstring("+  greeting: hello\n"), "verbose diff does not show the change")

	g.Expect(out).To(ContainSubstring(`.data.greeting (owned by "intruder")`), "diff does not name the conflict")

	// The intruder's field is named, and taken only when told so.
	_, err := h.a.Apply(h.ctx, objects, ApplyOptions{Timeout: 30 * time.Second})
	g.Expect(err).To(MatchError(ContainSubstring(`ConfigMap/cnatctl-lifecycle/settings: conflict: another field manager owns .data.greeting (owned by "intruder")`)))
	res, out = h.apply(objects, ApplyOptions{ForceConflicts: true})
	g.Expect(actions(res.Applied)).To(HaveKeyWithValue("ConfigMap/cnatctl-lifecycle/settings", "configured"), "apply after intruder:\n%s", out)
	g.Expect(testClient.Get(h.ctx, key, cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "hello"))
	var greetingOwners []string
	for _, mf := range cm.ManagedFields {
		if strings.Contains(mf.FieldsV1.GetRawString(), "greeting") {
			greetingOwners = append(greetingOwners, mf.Manager)
		}
	}
	g.Expect(greetingOwners).NotTo(ContainElement("intruder"), "intruder still owns greeting")
	d, out = h.diff(objects, DiffOptions{})
	g.Expect(d.Drift).To(BeFalse(), "drift after correcting apply:\n%s", out)
}

// TestPrune: only members of this set that the overlay no longer has are
// deleted; a bystander with the same labels but no part-of label, and a
// member of another set, survive.
func TestPrune(t *testing.T) {
	g := NewWithT(t)
	h := newHarness(t, "prune")
	v1, v2 := h.build("prune", "v1"), h.build("prune", "v2")
	h.apply(v1, ApplyOptions{Prune: true})

	bystander := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bystander", Namespace: "cnatctl-prune", Labels: map[string]string{"app": "demo"}}}
	otherSet := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other-set", Namespace: "cnatctl-prune", Labels: map[string]string{
		"app": "demo", LabelApplySetPartOf: ApplySetID("applyset-cnat-other", "default", "Secret", ""),
	}}}
	for _, cm := range []*corev1.ConfigMap{bystander, otherSet} {
		g.Expect(testClient.Create(h.ctx, cm)).To(Succeed())
	}
	drop := find(v1, "ConfigMap", "drop")

	// Without --prune the removed object stays, and diff --prune says it
	// would go.
	h.apply(v2, ApplyOptions{})
	h.get(drop)
	d, out := h.diff(v2, DiffOptions{Prune: true})
	g.Expect(d.Drift).To(BeTrue(), "diff --prune:\n%s", out)
	g.Expect(diffActions(d.Entries)).To(HaveKeyWithValue("ConfigMap/cnatctl-prune/drop", "deleted"), "diff --prune does not report drop:\n%s", out)
	g.Expect(diffActions(d.Entries)).NotTo(HaveKey("ConfigMap/cnatctl-prune/bystander"), "diff --prune would delete what is not the set's:\n%s", out)
	g.Expect(diffActions(d.Entries)).NotTo(HaveKey("ConfigMap/cnatctl-prune/other-set"), "diff --prune would delete what is not the set's:\n%s", out)

	res, out := h.apply(v2, ApplyOptions{Prune: true})
	g.Expect(actions(res.Pruned)).To(BeComparableTo(map[string]string{"ConfigMap/cnatctl-prune/drop": "deleted"}), out)
	g.Expect(out).To(ContainSubstring("ConfigMap/cnatctl-prune/drop deleted\n"), "output does not report the deletion")
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(drop.GroupVersionKind())
	err := testClient.Get(h.ctx, client.ObjectKeyFromObject(drop), live)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "drop still there: %v", err)
	for _, cm := range []*corev1.ConfigMap{bystander, otherSet} {
		g.Expect(testClient.Get(h.ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})).To(Succeed(), "%s was pruned", cm.Name)
	}
	h.get(find(v2, "ConfigMap", "keep"))
	d, out = h.diff(v2, DiffOptions{Prune: true})
	g.Expect(d.Drift).To(BeFalse(), "drift after prune:\n%s", out)
	g.Expect(h.parent().Annotations).To(HaveKeyWithValue(AnnotationApplySetGroupKinds, "ConfigMap,Namespace"))
}

// TestImmutable: a changed Deployment selector is named without --force
// (and nothing is applied), and recreated with it.
func TestImmutable(t *testing.T) {
	g := NewWithT(t)
	h := newHarness(t, "immutable")
	h.createNamespace("cnatctl-immutable")
	h.apply(h.build("immutable", "v1"), ApplyOptions{})
	v2 := h.build("immutable", "v2")
	before := h.get(find(v2, "Deployment", "api"))

	h.out.Reset()
	_, err := h.a.Apply(h.ctx, v2, ApplyOptions{Timeout: 30 * time.Second})
	g.Expect(err).To(HaveOccurred(), "apply of a changed selector without --force succeeded:\n%s", h.out)
	for _, want := range []string{"Deployment/cnatctl-immutable/api", "spec.selector", "--force", "nothing was applied"} {
		g.Expect(err).To(MatchError(ContainSubstring(want)))
	}
	g.Expect(h.get(before).GetResourceVersion()).To(Equal(before.GetResourceVersion()), "the Deployment changed although the apply failed")

	d, out := h.diff(v2, DiffOptions{})
	g.Expect(d.Drift).To(BeTrue(), "diff:\n%s", out)
	g.Expect(out).To(ContainSubstring("Deployment/cnatctl-immutable/api recreated (immutable field(s) spec.selector changed: apply needs --force)"))

	res, out := h.apply(v2, ApplyOptions{Force: true})
	g.Expect(actions(res.Applied)).To(HaveKeyWithValue("Deployment/cnatctl-immutable/api", ActionRecreated), "with --force:\n%s", out)
	after := &appsv1.Deployment{}
	g.Expect(testClient.Get(h.ctx, client.ObjectKey{Namespace: "cnatctl-immutable", Name: "api"}, after)).To(Succeed())
	g.Expect(after.UID).NotTo(Equal(before.GetUID()), "not recreated")
	g.Expect(after.Spec.Selector.MatchLabels).To(HaveKeyWithValue("tier", "backend"))
}

// TestForceRecreatesOnlyImmutable: --force recreates the object whose
// dry-run reported a change to an immutable field, and no other: not an
// object that changes as usual, and not one that the API server rejects as
// Invalid (here a Gadget that a CRD change in the same apply makes too
// big, which the dry-run before the CRD change could not see). The Gadget
// fails the apply and keeps its UID and its old spec.
func TestForceRecreatesOnlyImmutable(t *testing.T) {
	g := NewWithT(t)
	h := newHarness(t, "force")
	h.apply(h.build("force", "v1"), ApplyOptions{})
	v2 := h.build("force", "v2")
	gadget := h.get(find(v2, "Gadget", "knob"))
	plain := h.get(find(v2, "ConfigMap", "plain"))
	api := h.get(find(v2, "Deployment", "api"))

	h.out.Reset()
	_, err := h.a.Apply(h.ctx, v2, ApplyOptions{Force: true, Timeout: 30 * time.Second})
	t.Logf("apply --force output:\n%s", h.out)
	g.Expect(err).To(MatchError(ContainSubstring("Gadget/cnatctl-force/knob")))
	g.Expect(err).To(MatchError(ContainSubstring("should be less than or equal to 4")))
	g.Expect(h.out.String()).To(ContainSubstring("Deployment/cnatctl-force/api recreated\n"))

	live := h.get(gadget)
	g.Expect(live.GetUID()).To(Equal(gadget.GetUID()), "the Gadget was recreated")
	size, _, _ := unstructured.NestedInt64(live.Object, "spec", "size")
	g.Expect(size).To(Equal(int64(3)))
	live = h.get(plain)
	g.Expect(live.GetUID()).To(Equal(plain.GetUID()), "the ConfigMap was recreated")
	g.Expect(live.Object["data"]).To(HaveKeyWithValue("v", "2"))
	g.Expect(h.get(api).GetUID()).NotTo(Equal(api.GetUID()), "the Deployment was not recreated")
}

// requestCounter counts the requests for ConfigMaps, by method and whether
// they are dry runs.
type requestCounter struct {
	next   http.RoundTripper
	mu     sync.Mutex
	counts map[string]int
}

func (c *requestCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.Contains(r.URL.Path, "/configmaps") {
		key := r.Method
		if r.URL.Query().Has("dryRun") {
			key += " dryRun"
		}
		c.mu.Lock()
		c.counts[key]++
		c.mu.Unlock()
	}
	return c.next.RoundTrip(r)
}

// take returns the counts so far and starts again.
func (c *requestCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	counts := c.counts
	c.counts = map[string]int{}
	return counts
}

// TestRequestsPerObject: an apply plans each object with two reads (its
// own, and ssa's Diff's) and one dry-run; an object that changes is read
// and dry-run once more by ssa's Apply right before it is sent, against the
// cluster as the earlier stages left it, and sent; an unchanged one costs
// nothing more.
func TestRequestsPerObject(t *testing.T) {
	g := NewWithT(t)
	h := newHarness(t, "requests")
	h.createNamespace("cnatctl-requests")
	counter := &requestCounter{counts: map[string]int{}}
	cfg := rest.CopyConfig(testConfig)
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		counter.next = next
		return counter
	})
	a, err := NewApplier(cfg, Options{Set: h.set})
	g.Expect(err).NotTo(HaveOccurred())
	objects := func(greeting string) []*unstructured.Unstructured {
		var objs []*unstructured.Unstructured
		for _, name := range []string{"a", "b", "c"} {
			objs = append(objs, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": name, "namespace": "cnatctl-requests"},
				"data":     map[string]any{"greeting": greeting},
			}})
		}
		return objs
	}

	_, err = a.Apply(h.ctx, objects("hello"), ApplyOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(counter.take()).To(BeComparableTo(map[string]int{"GET": 9, "PATCH dryRun": 6, "PATCH": 3}), "creating 3 objects")

	_, err = a.Apply(h.ctx, objects("hello"), ApplyOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(counter.take()).To(BeComparableTo(map[string]int{"GET": 6, "PATCH dryRun": 3}), "3 unchanged objects")

	changed := objects("hello")
	changed[0].Object["data"] = map[string]any{"greeting": "bye"}
	_, err = a.Apply(h.ctx, changed, ApplyOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(counter.take()).To(BeComparableTo(map[string]int{"GET": 7, "PATCH dryRun": 4, "PATCH": 1}), "1 of 3 objects changed")
}

// TestTakeover: objects created by client-side `kubectl apply` and by
// `kubectl apply --server-side` end up owned by cnatctl alone, without the
// last-applied annotation, and the key the overlay no longer has is gone.
func TestTakeover(t *testing.T) {
	g := NewWithT(t)
	h := newHarness(t, "takeover")
	h.createNamespace("cnatctl-takeover")
	lastApplied := `{"apiVersion":"v1","data":{"mode":"manual","old":"x"},"kind":"ConfigMap","metadata":{"annotations":{},"name":"legacy","namespace":"cnatctl-takeover"}}`
	csa := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "legacy", Namespace: "cnatctl-takeover", Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: lastApplied}},
		Data:       map[string]string{"mode": "manual", "old": "x"},
	}
	g.Expect(testClient.Create(h.ctx, csa, client.FieldOwner("kubectl-client-side-apply"))).To(Succeed())
	ssaApplied := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "ssa-legacy", "namespace": "cnatctl-takeover"},
		"data":     map[string]any{"mode": "manual", "old": "x"},
	}}
	g.Expect(testClient.Apply(h.ctx, client.ApplyConfigurationFromUnstructured(ssaApplied), client.FieldOwner("kubectl"))).To(Succeed())

	res, out := h.apply(h.build("takeover"), ApplyOptions{})
	for _, name := range []string{"legacy", "ssa-legacy"} {
		g.Expect(actions(res.Applied)).To(HaveKeyWithValue("ConfigMap/cnatctl-takeover/"+name, "configured"), "takeover of %s:\n%s", name, out)
		g.Expect(out).To(ContainSubstring("ConfigMap/cnatctl-takeover/"+name+" configured (kubectl's fields taken over)\n"), "the takeover is not reported")
		cm := &corev1.ConfigMap{}
		g.Expect(testClient.Get(h.ctx, client.ObjectKey{Namespace: "cnatctl-takeover", Name: name}, cm)).To(Succeed())
		var managers []string
		for _, mf := range cm.ManagedFields {
			managers = append(managers, mf.Manager)
		}
		g.Expect(managers).To(HaveEach("cnatctl"), "%s: managed fields %v", name, cm.ManagedFields)
		g.Expect(cm.Annotations).NotTo(HaveKey(corev1.LastAppliedConfigAnnotation), name)
		g.Expect(cm.Data).To(BeComparableTo(map[string]string{"mode": "managed"}), name)
	}
	// And from now on they are plain members.
	res, out = h.apply(h.build("takeover"), ApplyOptions{})
	g.Expect(actions(res.Applied)).To(HaveEach("unchanged"), "after takeover:\n%s", out)

	// `kubectl apply --server-side` of the same content changes no value,
	// but kubectl now shares the fields and would keep them alive if the
	// overlay dropped them: diff and apply both see it.
	same := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "ssa-legacy", "namespace": "cnatctl-takeover"},
		"data":     map[string]any{"mode": "managed"},
	}}
	g.Expect(testClient.Apply(h.ctx, client.ApplyConfigurationFromUnstructured(same), client.FieldOwner("kubectl"))).To(Succeed())
	d, out := h.diff(h.build("takeover"), DiffOptions{})
	g.Expect(d.Drift).To(BeTrue(), "diff:\n%s", out)
	g.Expect(out).To(ContainSubstring("ConfigMap/cnatctl-takeover/ssa-legacy configured (kubectl's fields are taken over)\n"))
	res, out = h.apply(h.build("takeover"), ApplyOptions{})
	g.Expect(actions(res.Applied)).To(HaveKeyWithValue("ConfigMap/cnatctl-takeover/ssa-legacy", "configured"), out)
	cm := &corev1.ConfigMap{}
	g.Expect(testClient.Get(h.ctx, client.ObjectKey{Namespace: "cnatctl-takeover", Name: "ssa-legacy"}, cm)).To(Succeed())
	var managers []string
	for _, mf := range cm.ManagedFields {
		managers = append(managers, mf.Manager)
	}
	g.Expect(managers).To(HaveEach("cnatctl"), "managed fields %v", cm.ManagedFields)
	d, out = h.diff(h.build("takeover"), DiffOptions{})
	g.Expect(d.Drift).To(BeFalse(), "diff after the takeover:\n%s", out)
}

// TestRejectedAppliesNothing: two objects the API server rejects are both
// named, and not even the good one is applied.
func TestRejectedAppliesNothing(t *testing.T) {
	g := NewWithT(t)
	h := newHarness(t, "rejected")
	h.createNamespace("cnatctl-rejected")
	count := func() int {
		cms, deps := &corev1.ConfigMapList{}, &appsv1.DeploymentList{}
		g.Expect(testClient.List(h.ctx, cms, client.InNamespace("cnatctl-rejected"))).To(Succeed())
		g.Expect(testClient.List(h.ctx, deps, client.InNamespace("cnatctl-rejected"))).To(Succeed())
		return len(cms.Items) + len(deps.Items)
	}
	before := count()

	h.out.Reset()
	_, err := h.a.Apply(h.ctx, h.build("rejected"), ApplyOptions{})
	g.Expect(err).To(HaveOccurred(), "apply of rejected objects succeeded")
	t.Logf("error: %v", err)
	var problems Problems
	g.Expect(errors.As(err, &problems)).To(BeTrue(), "not Problems: %v", err)
	g.Expect(problems).To(HaveLen(2))
	for _, want := range []string{"ConfigMap/cnatctl-rejected/bad-key", "Deployment/cnatctl-rejected/no-containers", "nothing was applied"} {
		g.Expect(err).To(MatchError(ContainSubstring(want)))
	}
	g.Expect(count()).To(Equal(before))
	g.Expect(h.out.String()).To(BeEmpty(), "output although nothing was applied")
	err = testClient.Get(h.ctx, client.ObjectKey{Namespace: h.set.Namespace, Name: h.set.ParentName}, &corev1.Secret{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the parent was written: %v", err)

	// Diff lists the same problems, and still reports the good object.
	h.out.Reset()
	d, err := h.a.Diff(h.ctx, h.build("rejected"), DiffOptions{})
	g.Expect(errors.As(err, &problems)).To(BeTrue(), "diff: not Problems: %v", err)
	g.Expect(problems).To(HaveLen(2))
	g.Expect(d).NotTo(BeNil())
	g.Expect(diffActions(d.Entries)).To(HaveKeyWithValue("ConfigMap/cnatctl-rejected/fine", "created"), "diff did not report the good object:\n%s", h.out)
}

// TestWait: --wait reports progress and succeeds when everything becomes
// ready; it names what is not ready when it times out.
func TestWait(t *testing.T) {
	g := NewWithT(t)
	h := newHarness(t, "wait")
	_, out := h.apply(h.build("waitset"), ApplyOptions{Wait: true, Timeout: 20 * time.Second})
	g.Expect(out).To(ContainSubstring("waiting for 1 object to become ready"))
	g.Expect(out).To(ContainSubstring("1 object ready after"))

	// A Deployment never becomes ready without a controller-manager.
	objects := h.build("waitset")
	dep := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "never-ready", "namespace": "cnatctl-wait"},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"app": "never"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "never"}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "busybox:1.37"}}},
			},
		},
	}}
	h.out.Reset()
	_, err := h.a.Apply(h.ctx, append(objects, dep), ApplyOptions{Wait: true, Timeout: 3 * time.Second})
	g.Expect(err).To(MatchError(ContainSubstring("Deployment/cnatctl-wait/never-ready: InProgress")), "output:\n%s", h.out)
	g.Expect(h.out.String()).To(ContainSubstring("still waiting for 1 of 2"))
}

// TestSkipAnnotation: an object annotated to be left alone, in the overlay
// or in the cluster, is neither applied nor pruned.
func TestSkipAnnotation(t *testing.T) {
	g := NewWithT(t)
	h := newHarness(t, "skip")
	h.createNamespace("cnatctl-skip")
	cm := func(name, value string, annotations map[string]any) *unstructured.Unstructured {
		meta := map[string]any{"name": name, "namespace": "cnatctl-skip"}
		if annotations != nil {
			meta["annotations"] = annotations
		}
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": map[string]any{"v": value}}}
	}
	h.apply([]*unstructured.Unstructured{cm("held", "1", nil), cm("gone", "1", nil)}, ApplyOptions{})

	// Someone marks "held" in the cluster and edits it by hand.
	live := h.get(cm("held", "", nil))
	live.SetAnnotations(map[string]string{SkipAnnotation: SkipValue})
	_ = unstructured.SetNestedField(live.Object, "by hand", "data", "v")
	g.Expect(testClient.Update(h.ctx, live, client.FieldOwner("someone"))).To(Succeed())
	res, out := h.apply([]*unstructured.Unstructured{cm("held", "2", nil), cm("new", "1", map[string]any{SkipAnnotation: SkipValue})}, ApplyOptions{Prune: true})
	g.Expect(actions(res.Applied)).To(BeComparableTo(map[string]string{"ConfigMap/cnatctl-skip/held": "skipped", "ConfigMap/cnatctl-skip/new": "skipped"}), out)
	g.Expect(actions(res.Pruned)).To(BeComparableTo(map[string]string{"ConfigMap/cnatctl-skip/gone": "deleted"}), out)
	v, _, _ := unstructured.NestedString(h.get(live).Object, "data", "v")
	g.Expect(v).To(Equal("by hand"), "held was applied")
	err := testClient.Get(h.ctx, client.ObjectKey{Namespace: "cnatctl-skip", Name: "new"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "new was created: %v", err)
}
