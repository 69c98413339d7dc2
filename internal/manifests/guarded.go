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

// webhookGuarded are the fields of a webhook that decide which requests it
// sees and what happens when it cannot be called.
var webhookGuarded = []string{"namespaceSelector", "objectSelector", "rules", "failurePolicy", "matchPolicy", "matchConditions"}

// guardedKind says how o's admission fields are kept: "webhooks", "spec"
// (admission policies and bindings) or "" (none).
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

// guardedPath says whether field, a conflict's path, is one of o's guarded
// fields (guardedFields) or inside one.
func guardedPath(o *unstructured.Unstructured, field string) bool {
	for path := range guardedFields(o) {
		if rest, ok := strings.CutPrefix(field, path); ok && (rest == "" || rest[0] == '.' || rest[0] == '[') {
			return true
		}
	}
	return false
}

// guarded compares the admission fields of live with what o, created anew
// (a dry-run create of a renamed copy, defaults included), would have, and
// returns that object and the fields that differ.
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

// guardedFields returns the guarded fields of o by path (nil where unset).
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

// restoreGuarded sets the object's guarded fields to fresh's, by an update
// carrying the resourceVersion it read.
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
