package manifests

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// webhookGuarded are the fields of each webhook of a webhook configuration
// that decide which requests it sees and what happens when it cannot be
// called: a change by anyone else weakens cnat's admission.
var webhookGuarded = []string{"namespaceSelector", "objectSelector", "rules", "failurePolicy", "matchPolicy", "matchConditions"}

// guardedKind says how o's admission fields are kept: "webhooks" for
// webhook configurations, "spec" for ValidatingAdmissionPolicies and their
// bindings (the whole spec), "" for any other object.
func guardedKind(o *unstructured.Unstructured) string {
	gk := o.GroupVersionKind().GroupKind()
	if gk.Group != "admissionregistration.k8s.io" {
		return ""
	}
	switch gk.Kind {
	case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
		return "webhooks"
	case "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
		return "spec"
	}
	return ""
}

// guardedPath says whether field, a path as the API server names it in a
// conflict, is one of o's guarded fields (guardedFields) or inside one.
func guardedPath(o *unstructured.Unstructured, field string) bool {
	for path := range guardedFields(o) {
		if rest, ok := strings.CutPrefix(field, path); ok && (rest == "" || rest[0] == '.' || rest[0] == '[') {
			return true
		}
	}
	return false
}

// guarded compares the admission fields of live with what o, created anew,
// would have (a dry-run create of a copy under another name, so that the API
// server's defaults count: a namespaceSelector the overlay leaves out is
// {}), and returns that object and the fields that differ. Server-side
// apply alone does not see a field the overlay leaves unset and someone else
// set; cnatctl sets these fields back whoever wrote them (restoreGuarded).
func (a *Applier) guarded(ctx context.Context, o, live *unstructured.Unstructured) (*unstructured.Unstructured, []string, error) {
	if live == nil || guardedKind(o) == "" {
		return nil, nil, nil
	}
	fresh := o.DeepCopy()
	fresh.SetName("")
	fresh.SetGenerateName(o.GetName() + "-")
	if err := a.client.Create(ctx, fresh, client.DryRunAll, client.FieldOwner(cnatv1beta1.CLIFieldManager)); err != nil {
		return nil, nil, fmt.Errorf("dry-run of it as a new object, to compare its admission fields: %w", err)
	}
	var changed []string
	want, have := guardedFields(fresh), guardedFields(live)
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if !equality.Semantic.DeepEqual(want[k], have[k]) {
			changed = append(changed, k)
		}
	}
	return fresh, changed, nil
}

// guardedFields returns the guarded fields of o by path: .spec, or
// .webhooks[name="<name>"].<field> for each webhook and field in
// webhookGuarded (nil where unset).
func guardedFields(o *unstructured.Unstructured) map[string]any {
	out := map[string]any{}
	switch guardedKind(o) {
	case "spec":
		out[".spec"] = o.Object["spec"]
	case "webhooks":
		webhooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		for _, w := range webhooks {
			w, _ := w.(map[string]any)
			for _, f := range webhookGuarded {
				out[fmt.Sprintf(".webhooks[name=%q].%s", w["name"], f)] = w[f]
			}
		}
	}
	return out
}

// restoreGuarded sets the guarded fields of the object in the cluster to
// those of fresh (see guarded), by an update that carries the
// resourceVersion it read.
func (a *Applier) restoreGuarded(ctx context.Context, fresh *unstructured.Unstructured, name string) error {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(fresh.GroupVersionKind())
	if err := a.client.Get(ctx, client.ObjectKey{Name: name}, live); err != nil {
		return fmt.Errorf("reading it to restore its admission fields: %w", err)
	}
	switch guardedKind(fresh) {
	case "spec":
		live.Object["spec"] = fresh.Object["spec"]
	case "webhooks":
		want := map[any]map[string]any{}
		webhooks, _, _ := unstructured.NestedSlice(fresh.Object, "webhooks")
		for _, w := range webhooks {
			w, _ := w.(map[string]any)
			want[w["name"]] = w
		}
		webhooks, _, _ = unstructured.NestedSlice(live.Object, "webhooks")
		for _, w := range webhooks {
			w, _ := w.(map[string]any)
			for _, f := range webhookGuarded {
				if v, ok := want[w["name"]][f]; ok {
					w[f] = v
				} else if want[w["name"]] != nil {
					delete(w, f)
				}
			}
		}
		live.Object["webhooks"] = webhooks
	}
	if err := a.client.Update(ctx, live, client.FieldOwner(cnatv1beta1.CLIFieldManager)); err != nil {
		return fmt.Errorf("restoring its admission fields: %w", err)
	}
	return nil
}
