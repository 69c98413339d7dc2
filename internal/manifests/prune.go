package manifests

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fluxcd/cli-utils/pkg/object"
	"github.com/fluxcd/pkg/ssa"
)

// pruneCandidates lists the members of the set, objects labelled
// part-of=<the set's id>, of every kind inv records, in every namespace inv
// records (cluster-wide for cluster-scoped kinds), that are not among keep.
// Objects without the label, or with another set's id, are never listed
// (the API server selects by the label). A candidate carries its kind,
// namespace, name and annotations: ssa's DeleteAll reads it again before it
// deletes it.
// Kinds the cluster no longer serves are passed over: nothing of them is
// left to delete.
func (a *Applier) pruneCandidates(ctx context.Context, inv *inventory, keep []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	kept := object.UnstructuredSetToObjMetadataSet(keep)
	var candidates []*unstructured.Unstructured
	var errs []error
	for _, s := range sets.List(inv.groupKinds) {
		gk := schema.ParseGroupKind(s)
		m, err := a.mapper.RESTMapping(gk)
		if meta.IsNoMatchError(err) {
			continue
		} else if err != nil {
			errs = append(errs, fmt.Errorf("looking up %s: %w", gk, err))
			continue
		}
		namespaces := []string{""}
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			namespaces = sets.List(inv.namespaces)
		}
		for _, ns := range namespaces {
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(m.GroupVersionKind)
			if err := a.client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{LabelApplySetPartOf: a.opts.Set.ID}); err != nil {
				where := "cluster-wide"
				if ns != "" {
					where = "in namespace " + ns
				}
				errs = append(errs, fmt.Errorf("listing %s %s: %w", gk, where, err))
				continue
			}
			for _, item := range list.Items {
				if kept.Contains(object.ObjMetadata{GroupKind: gk, Namespace: item.Namespace, Name: item.Name}) {
					continue
				}
				u := &unstructured.Unstructured{}
				u.SetGroupVersionKind(m.GroupVersionKind)
				u.SetNamespace(item.Namespace)
				u.SetName(item.Name)
				u.SetAnnotations(item.Annotations)
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
		Inclusions:        map[string]string{LabelApplySetPartOf: a.opts.Set.ID},
		Exclusions:        skip,
	})
	var entries []Entry
	for _, e := range cs.Entries {
		entries = append(entries, a.print(Entry{e.Subject, string(e.Action)}))
	}
	if err != nil {
		return entries, fmt.Errorf("pruning: %w", err)
	}
	if deleted := len(cs.ToGroupedMap()[ssa.DeletedAction]); wait && deleted > 0 {
		a.printf("waiting for %s to be deleted (timeout %s)...\n", countOf(deleted, "object"), timeout)
		if err := a.rm.WaitForSetTermination(cs, ssa.WaitOptions{Interval: a.opts.PollInterval, Timeout: timeout}); err != nil {
			return entries, fmt.Errorf("waiting for pruned objects to be deleted: %w", err)
		}
	}
	return entries, nil
}
