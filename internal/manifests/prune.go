package manifests

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fluxcd/pkg/ssa"
)

// objectKey identifies an object across API versions.
type objectKey struct {
	gk        schema.GroupKind
	namespace string
	name      string
}

func keyOf(o *unstructured.Unstructured) objectKey {
	return objectKey{gk: o.GroupVersionKind().GroupKind(), namespace: o.GetNamespace(), name: o.GetName()}
}

// pruneCandidates lists the members of the set, objects labelled
// part-of=<the set's id>, of every kind inv records, in every namespace inv
// records (cluster-wide for cluster-scoped kinds), that are not among keep.
// Objects without the label, or with another set's id, are never listed.
// Kinds the cluster no longer serves are passed over: nothing of them is
// left to delete.
func (a *Applier) pruneCandidates(ctx context.Context, inv *inventory, keep []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	kept := sets.New[objectKey]()
	for _, o := range keep {
		kept.Insert(keyOf(o))
	}
	gks := inv.groupKinds.UnsortedList()
	slices.SortFunc(gks, func(x, y schema.GroupKind) int { return cmp.Compare(x.String(), y.String()) })
	selector := client.MatchingLabels{LabelApplySetPartOf: a.set.ID}

	var candidates []*unstructured.Unstructured
	var errs []error
	for _, gk := range gks {
		m, err := a.mapper.RESTMapping(gk)
		if meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("looking up %s: %w", gk, err))
			continue
		}
		namespaces := []string{""}
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			namespaces = sets.List(inv.namespaces)
		}
		for _, ns := range namespaces {
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(m.GroupVersionKind.GroupVersion().WithKind(m.GroupVersionKind.Kind + "List"))
			opts := []client.ListOption{selector}
			if ns != "" {
				opts = append(opts, client.InNamespace(ns))
			}
			if err := a.client.List(ctx, list, opts...); err != nil {
				where := "cluster-wide"
				if ns != "" {
					where = "in namespace " + ns
				}
				errs = append(errs, fmt.Errorf("listing %s %s: %w", gk, where, err))
				continue
			}
			for _, item := range list.Items {
				u := &unstructured.Unstructured{}
				u.SetGroupVersionKind(m.GroupVersionKind)
				u.SetNamespace(item.Namespace)
				u.SetName(item.Name)
				u.SetLabels(item.Labels)
				u.SetAnnotations(item.Annotations)
				if kept.Has(keyOf(u)) || item.Labels[LabelApplySetPartOf] != a.set.ID {
					continue
				}
				candidates = append(candidates, u)
			}
		}
	}
	if len(errs) > 0 {
		return candidates, fmt.Errorf("finding objects to prune: %w", errors.Join(errs...))
	}
	return candidates, nil
}

// prune deletes the candidates (ssa's DeleteAll, in reverse apply order),
// deleting an object only if it still carries the set's part-of label at
// the time of deletion and is not annotated SkipAnnotation=SkipValue. With
// wait, it waits until they are gone.
func (a *Applier) prune(ctx context.Context, candidates []*unstructured.Unstructured, wait bool, timeout time.Duration) ([]Entry, error) {
	if len(candidates) == 0 {
		return nil, nil
	}
	cs, err := a.rm.DeleteAll(ctx, candidates, ssa.DeleteOptions{
		PropagationPolicy: metav1.DeletePropagationBackground,
		Inclusions:        map[string]string{LabelApplySetPartOf: a.set.ID},
		Exclusions:        skip,
	})
	var entries []Entry
	var deleted []*unstructured.Unstructured
	if cs != nil {
		for _, e := range cs.Entries {
			entries = append(entries, a.print(Entry{Ref: e.Subject, Action: string(e.Action)}))
		}
		for _, c := range candidates {
			if slices.ContainsFunc(cs.Entries, func(e ssa.ChangeSetEntry) bool {
				return e.Action == ssa.DeletedAction && e.Subject == Ref(c)
			}) {
				deleted = append(deleted, c)
			}
		}
	}
	if err != nil {
		return entries, fmt.Errorf("pruning: %w", err)
	}
	if wait && len(deleted) > 0 {
		a.printf("waiting for %s to be deleted (timeout %s)...\n", describeSet(len(deleted)), timeout)
		if err := a.rm.WaitForTermination(deleted, ssa.WaitOptions{Interval: a.pollInterval, Timeout: timeout}); err != nil {
			return entries, fmt.Errorf("waiting for pruned objects to be deleted: %w", err)
		}
	}
	return entries, nil
}
