package manifests

import (
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestLifecycle: a CRD and its CR in one apply; re-apply changes nothing;
// a third field manager's change is drift that diff reports and apply
// corrects.
func TestLifecycle(t *testing.T) {
	h := newHarness(t, "lifecycle")
	objects := h.build("lifecycle")

	// Before the first apply, diff says everything would be created; the
	// Widget cannot be dry-run before its CRD exists.
	d, out := h.diff(objects, DiffOptions{})
	if !d.Drift {
		t.Errorf("no drift before the first apply:\n%s", out)
	}
	for ref, action := range diffActions(d.Entries) {
		if action != "created" {
			t.Errorf("diff before apply: %s %s, want created", ref, action)
		}
	}
	if !strings.Contains(out, "Widget/cnatctl-lifecycle/gear created (its CustomResourceDefinition is created by this apply; not dry-run)") {
		t.Errorf("diff does not explain the Widget:\n%s", out)
	}

	res, out := h.apply(objects, ApplyOptions{})
	want := map[string]string{
		"Namespace/cnatctl-lifecycle":                          "created",
		"CustomResourceDefinition/widgets.cnatctl.example.com": "created",
		"Widget/cnatctl-lifecycle/gear":                        "created",
		"ConfigMap/cnatctl-lifecycle/settings":                 "created",
		"ConfigMap/cnatctl-lifecycle/extra":                    "created",
		"Deployment/cnatctl-lifecycle/web":                     "created",
	}
	if got := actions(res.Applied); !equalMaps(got, want) {
		t.Errorf("first apply: %v, want %v\n%s", got, want, out)
	}
	// CRDs and Namespaces come first, and are waited for.
	if !strings.HasPrefix(out, "CustomResourceDefinition/widgets.cnatctl.example.com created\nNamespace/cnatctl-lifecycle created\nwaiting for CustomResourceDefinitions and Namespaces (2 objects)") {
		t.Errorf("stage 1 not first:\n%s", out)
	}
	widget := h.get(find(objects, "Widget", "gear"))
	if size, _, _ := unstructured.NestedInt64(widget.Object, "spec", "size"); size != 3 {
		t.Errorf("widget size %d", size)
	}

	// Every member carries the set's id; the parent records kinds and
	// namespaces.
	rvs := map[string]string{}
	for _, o := range objects {
		live := h.get(o)
		if got := live.GetLabels()[LabelApplySetPartOf]; got != h.set.ID {
			t.Errorf("%s: part-of %q, want %q", Ref(o), got, h.set.ID)
		}
		rvs[Ref(o)] = live.GetResourceVersion()
	}
	parent := h.parent()
	if parent.Labels[LabelApplySetID] != h.set.ID ||
		parent.Annotations[AnnotationApplySetTooling] != "cnatctl/v0.0.0-test" ||
		parent.Annotations[AnnotationApplySetGroupKinds] != "ConfigMap,CustomResourceDefinition.apiextensions.k8s.io,Deployment.apps,Namespace,Widget.cnatctl.example.com" ||
		parent.Annotations[AnnotationApplySetAdditionalNamespaces] != "cnatctl-lifecycle" {
		t.Errorf("parent labels %v annotations %v", parent.Labels, parent.Annotations)
	}
	parentRV := parent.ResourceVersion

	// Re-apply: everything unchanged, not one write.
	res, out = h.apply(h.build("lifecycle"), ApplyOptions{})
	for _, e := range res.Applied {
		if e.Action != "unchanged" {
			t.Errorf("re-apply: %s\n%s", e, out)
		}
	}
	for _, o := range objects {
		if rv := h.get(o).GetResourceVersion(); rv != rvs[Ref(o)] {
			t.Errorf("re-apply changed %s: resourceVersion %s -> %s", Ref(o), rvs[Ref(o)], rv)
		}
	}
	if rv := h.parent().ResourceVersion; rv != parentRV {
		t.Errorf("re-apply rewrote the parent: %s -> %s", parentRV, rv)
	}
	if d, out := h.diff(objects, DiffOptions{}); d.Drift {
		t.Errorf("drift right after apply:\n%s", out)
	}

	// A third field manager changes a value.
	cm := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: "cnatctl-lifecycle", Name: "settings"}
	if err := testClient.Get(h.ctx, key, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["greeting"] = "intruded"
	if err := testClient.Update(h.ctx, cm, client.FieldOwner("intruder")); err != nil {
		t.Fatal(err)
	}

	d, out = h.diff(objects, DiffOptions{Verbose: true})
	if !d.Drift {
		t.Fatalf("diff does not see the intruder:\n%s", out)
	}
	for ref, action := range diffActions(d.Entries) {
		want := "unchanged"
		if ref == "ConfigMap/cnatctl-lifecycle/settings" {
			want = "configured"
		}
		if action != want {
			t.Errorf("diff: %s %s, want %s", ref, action, want)
		}
	}
	if !strings.Contains(out, "-  greeting: intruded\n") || !strings.Contains(out, "+  greeting: hello\n") {
		t.Errorf("verbose diff does not show the change:\n%s", out)
	}

	res, out = h.apply(objects, ApplyOptions{})
	if got := actions(res.Applied)["ConfigMap/cnatctl-lifecycle/settings"]; got != "configured" {
		t.Errorf("apply after intruder: settings %s\n%s", got, out)
	}
	if err := testClient.Get(h.ctx, key, cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data["greeting"] != "hello" {
		t.Errorf("greeting %q after apply", cm.Data["greeting"])
	}
	for _, mf := range cm.ManagedFields {
		if mf.Manager == "intruder" && strings.Contains(mf.FieldsV1.GetRawString(), "greeting") {
			t.Errorf("intruder still owns greeting: %s", mf.FieldsV1.GetRawString())
		}
	}
	if d, out := h.diff(objects, DiffOptions{}); d.Drift {
		t.Errorf("drift after correcting apply:\n%s", out)
	}
}

// TestPrune: only members of this set that the overlay no longer has are
// deleted; a bystander with the same labels but no part-of label, and a
// member of another set, survive.
func TestPrune(t *testing.T) {
	h := newHarness(t, "prune")
	v1, v2 := h.build("prune", "v1"), h.build("prune", "v2")
	h.apply(v1, ApplyOptions{Prune: true})

	bystander := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bystander", Namespace: "cnatctl-prune", Labels: map[string]string{"app": "demo"}}}
	otherSet := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other-set", Namespace: "cnatctl-prune", Labels: map[string]string{
		"app": "demo", LabelApplySetPartOf: ApplySetID("applyset-cnat-other", "default", "Secret", ""),
	}}}
	for _, cm := range []*corev1.ConfigMap{bystander, otherSet} {
		if err := testClient.Create(h.ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	drop := find(v1, "ConfigMap", "drop")

	// Without --prune the removed object stays, and diff --prune says it
	// would go.
	h.apply(v2, ApplyOptions{})
	h.get(drop)
	d, out := h.diff(v2, DiffOptions{Prune: true})
	if !d.Drift || diffActions(d.Entries)["ConfigMap/cnatctl-prune/drop"] != "deleted" {
		t.Errorf("diff --prune does not report drop:\n%s", out)
	}
	if a := diffActions(d.Entries); a["ConfigMap/cnatctl-prune/bystander"] != "" || a["ConfigMap/cnatctl-prune/other-set"] != "" {
		t.Errorf("diff --prune would delete what is not the set's:\n%s", out)
	}

	res, out := h.apply(v2, ApplyOptions{Prune: true})
	if got := actions(res.Pruned); !equalMaps(got, map[string]string{"ConfigMap/cnatctl-prune/drop": "deleted"}) {
		t.Errorf("pruned %v\n%s", got, out)
	}
	if !strings.Contains(out, "ConfigMap/cnatctl-prune/drop deleted\n") {
		t.Errorf("output does not report the deletion:\n%s", out)
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(drop.GroupVersionKind())
	if err := testClient.Get(h.ctx, client.ObjectKeyFromObject(drop), live); !apierrors.IsNotFound(err) {
		t.Errorf("drop still there: %v", err)
	}
	for _, cm := range []*corev1.ConfigMap{bystander, otherSet} {
		if err := testClient.Get(h.ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}); err != nil {
			t.Errorf("%s was pruned: %v", cm.Name, err)
		}
	}
	h.get(find(v2, "ConfigMap", "keep"))
	if d, out := h.diff(v2, DiffOptions{Prune: true}); d.Drift {
		t.Errorf("drift after prune:\n%s", out)
	}
	if got := h.parent().Annotations[AnnotationApplySetGroupKinds]; got != "ConfigMap,Namespace" {
		t.Errorf("parent kinds %q", got)
	}
}

// TestImmutable: a changed Deployment selector is named without --force
// (and nothing is applied), and recreated with it.
func TestImmutable(t *testing.T) {
	h := newHarness(t, "immutable")
	h.createNamespace("cnatctl-immutable")
	h.apply(h.build("immutable", "v1"), ApplyOptions{})
	v2 := h.build("immutable", "v2")
	before := h.get(find(v2, "Deployment", "api"))

	h.out.Reset()
	_, err := h.a.Apply(h.ctx, v2, ApplyOptions{Timeout: 30 * time.Second})
	if err == nil {
		t.Fatalf("apply of a changed selector without --force succeeded:\n%s", h.out)
	}
	for _, want := range []string{"Deployment/cnatctl-immutable/api", "spec.selector", "--force", "nothing was applied"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q: %v", want, err)
		}
	}
	if live := h.get(before); live.GetResourceVersion() != before.GetResourceVersion() {
		t.Error("the Deployment changed although the apply failed")
	}

	d, out := h.diff(v2, DiffOptions{})
	if !d.Drift || !strings.Contains(out, "Deployment/cnatctl-immutable/api recreated (immutable field(s) spec.selector changed: apply needs --force)") {
		t.Errorf("diff:\n%s", out)
	}

	res, out := h.apply(v2, ApplyOptions{Force: true})
	if got := actions(res.Applied)["Deployment/cnatctl-immutable/api"]; got != ActionRecreated {
		t.Errorf("with --force: %s\n%s", got, out)
	}
	after := &appsv1.Deployment{}
	if err := testClient.Get(h.ctx, client.ObjectKey{Namespace: "cnatctl-immutable", Name: "api"}, after); err != nil {
		t.Fatal(err)
	}
	if after.UID == before.GetUID() || after.Spec.Selector.MatchLabels["tier"] != "backend" {
		t.Errorf("not recreated: uid %s (was %s), selector %v", after.UID, before.GetUID(), after.Spec.Selector)
	}
}

// TestTakeover: objects created by client-side `kubectl apply` and by
// `kubectl apply --server-side` end up owned by cnatctl alone, without the
// last-applied annotation, and the key the overlay no longer has is gone.
func TestTakeover(t *testing.T) {
	h := newHarness(t, "takeover")
	h.createNamespace("cnatctl-takeover")
	lastApplied := `{"apiVersion":"v1","data":{"mode":"manual","old":"x"},"kind":"ConfigMap","metadata":{"annotations":{},"name":"legacy","namespace":"cnatctl-takeover"}}`
	csa := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "legacy", Namespace: "cnatctl-takeover", Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: lastApplied}},
		Data:       map[string]string{"mode": "manual", "old": "x"},
	}
	if err := testClient.Create(h.ctx, csa, client.FieldOwner("kubectl-client-side-apply")); err != nil {
		t.Fatal(err)
	}
	ssaApplied := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "ssa-legacy", "namespace": "cnatctl-takeover"},
		"data":     map[string]any{"mode": "manual", "old": "x"},
	}}
	if err := testClient.Apply(h.ctx, client.ApplyConfigurationFromUnstructured(ssaApplied), client.FieldOwner("kubectl")); err != nil {
		t.Fatal(err)
	}

	res, out := h.apply(h.build("takeover"), ApplyOptions{})
	for _, name := range []string{"legacy", "ssa-legacy"} {
		if got := actions(res.Applied)["ConfigMap/cnatctl-takeover/"+name]; got != "configured" {
			t.Errorf("takeover of %s: %s\n%s", name, got, out)
		}
		cm := &corev1.ConfigMap{}
		if err := testClient.Get(h.ctx, client.ObjectKey{Namespace: "cnatctl-takeover", Name: name}, cm); err != nil {
			t.Fatal(err)
		}
		for _, mf := range cm.ManagedFields {
			if mf.Manager != "cnatctl" {
				t.Errorf("%s: manager %s (%s) still owns %s", name, mf.Manager, mf.Operation, mf.FieldsV1.GetRawString())
			}
		}
		if _, ok := cm.Annotations[corev1.LastAppliedConfigAnnotation]; ok {
			t.Errorf("%s: last-applied-configuration annotation still there", name)
		}
		if len(cm.Data) != 1 || cm.Data["mode"] != "managed" {
			t.Errorf("%s: data %v, want only mode=managed", name, cm.Data)
		}
	}
	// And from now on they are plain members.
	res, out = h.apply(h.build("takeover"), ApplyOptions{})
	for _, e := range res.Applied {
		if e.Action != "unchanged" {
			t.Errorf("after takeover: %s\n%s", e, out)
		}
	}
}

// TestRejectedAppliesNothing: two objects the API server rejects are both
// named, and not even the good one is applied.
func TestRejectedAppliesNothing(t *testing.T) {
	h := newHarness(t, "rejected")
	h.createNamespace("cnatctl-rejected")
	count := func() int {
		cms, deps := &corev1.ConfigMapList{}, &appsv1.DeploymentList{}
		if err := testClient.List(h.ctx, cms, client.InNamespace("cnatctl-rejected")); err != nil {
			t.Fatal(err)
		}
		if err := testClient.List(h.ctx, deps, client.InNamespace("cnatctl-rejected")); err != nil {
			t.Fatal(err)
		}
		return len(cms.Items) + len(deps.Items)
	}
	before := count()

	h.out.Reset()
	_, err := h.a.Apply(h.ctx, h.build("rejected"), ApplyOptions{})
	if err == nil {
		t.Fatal("apply of rejected objects succeeded")
	}
	t.Logf("error: %v", err)
	var problems Problems
	if !errors.As(err, &problems) || len(problems) != 2 {
		t.Fatalf("want 2 problems, got %v", err)
	}
	for _, want := range []string{"ConfigMap/cnatctl-rejected/bad-key", "Deployment/cnatctl-rejected/no-containers", "nothing was applied"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %s: %v", want, err)
		}
	}
	if after := count(); after != before {
		t.Errorf("%d objects before, %d after", before, after)
	}
	if h.out.Len() != 0 {
		t.Errorf("output although nothing was applied:\n%s", h.out)
	}
	err = testClient.Get(h.ctx, client.ObjectKey{Namespace: h.set.Namespace, Name: h.set.ParentName}, &corev1.Secret{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the parent was written: %v", err)
	}

	// Diff lists the same problems, and still reports the good object.
	h.out.Reset()
	d, err := h.a.Diff(h.ctx, h.build("rejected"), DiffOptions{})
	if !errors.As(err, &problems) || len(problems) != 2 {
		t.Errorf("diff: want 2 problems, got %v", err)
	}
	if d == nil || diffActions(d.Entries)["ConfigMap/cnatctl-rejected/fine"] != "created" {
		t.Errorf("diff did not report the good object:\n%s", h.out)
	}
}

// TestWait: --wait reports progress and succeeds when everything becomes
// ready; it names what is not ready when it times out.
func TestWait(t *testing.T) {
	h := newHarness(t, "wait")
	_, out := h.apply(h.build("waitset"), ApplyOptions{Wait: true, Timeout: 20 * time.Second})
	if !strings.Contains(out, "waiting for 1 object to become ready") || !strings.Contains(out, "1 object ready after") {
		t.Errorf("no progress lines:\n%s", out)
	}

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
	if err == nil {
		t.Fatalf("wait for a Deployment without controllers succeeded:\n%s", h.out)
	}
	if !strings.Contains(err.Error(), "Deployment/cnatctl-wait/never-ready: InProgress") {
		t.Errorf("timeout error does not name the Deployment: %v", err)
	}
	if !strings.Contains(h.out.String(), "still waiting for 1 of 2") {
		t.Errorf("no progress line:\n%s", h.out)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestSkipAnnotation: an object annotated to be left alone, in the overlay
// or in the cluster, is neither applied nor pruned.
func TestSkipAnnotation(t *testing.T) {
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
	if err := testClient.Update(h.ctx, live, client.FieldOwner("someone")); err != nil {
		t.Fatal(err)
	}
	res, out := h.apply([]*unstructured.Unstructured{cm("held", "2", nil), cm("new", "1", map[string]any{SkipAnnotation: SkipValue})}, ApplyOptions{Prune: true})
	want := map[string]string{"ConfigMap/cnatctl-skip/held": "skipped", "ConfigMap/cnatctl-skip/new": "skipped"}
	if got := actions(res.Applied); !equalMaps(got, want) {
		t.Errorf("applied %v, want %v\n%s", got, want, out)
	}
	if got := actions(res.Pruned); !equalMaps(got, map[string]string{"ConfigMap/cnatctl-skip/gone": "deleted"}) {
		t.Errorf("pruned %v\n%s", got, out)
	}
	if v, _, _ := unstructured.NestedString(h.get(live).Object, "data", "v"); v != "by hand" {
		t.Errorf("held was applied: %q", v)
	}
	err := testClient.Get(h.ctx, client.ObjectKey{Namespace: "cnatctl-skip", Name: "new"}, &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("new was created: %v", err)
	}
}
