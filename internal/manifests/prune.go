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

// pruneCandidates lists the set's members (selected by the part-of label) of
// the kinds and namespaces inv records that are not among keep; kinds the
// cluster no longer serves are passed over.
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

// prune deletes the candidates that still carry the set's label and are not
// skipped (ssa's DeleteAll, in reverse apply order).
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
