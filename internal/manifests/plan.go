package manifests

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"golang.org/x/sync/errgroup"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fluxcd/pkg/ssa"
	ssaerrors "github.com/fluxcd/pkg/ssa/errors"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// plan is what applying would do to one object, decided by one server-side
// dry-run (ssa's Diff) before anything is applied.
type plan struct {
	obj *unstructured.Unstructured
	// live is the object in the cluster, nil if there is none.
	live *unstructured.Unstructured
	// action is the ssa action or recreated; notes say what the dry-run does not show.
	action ssa.Action
	notes  []string
	// deferred: its CRD or Namespace is created in this run, so no dry-run yet.
	deferred bool
	// immutable is the dry-run's error for a change to an immutable field.
	immutable error
	// before and after are the live object and the dry-run's result.
	before, after *unstructured.Unstructured
	// conflicts are the fields another manager owns with another value.
	conflicts []string
	// fresh is the object as if created anew, when someone else changed its
	// admission fields (guarded.go).
	fresh *unstructured.Unstructured
	// applied says, for apply's line, what applying does beyond the dry-run.
	applied []string
	// err is why the object cannot be applied; nothing else is set then.
	err error
}

// planAll plans every object, in order, at most four at once.
func (a *Applier) planAll(ctx context.Context, objects []*unstructured.Unstructured, def defined) []*plan {
	plans := make([]*plan, len(objects))
	var g errgroup.Group
	g.SetLimit(4)
	for i, o := range objects {
		g.Go(func() error {
			plans[i] = a.plan(ctx, o, def.scopes, def.namespaces)
			return nil
		})
	}
	_ = g.Wait() // a plan records its own error
	return plans
}

// plan reads o from the cluster (ssa's Diff returns it only when changed, and
// without managers) and dry-runs it with ssa's Diff; an object that needs one
// of crds or namespaces, which the set creates, is deferred.
func (a *Applier) plan(ctx context.Context, o *unstructured.Unstructured, crds map[schema.GroupKind]apiextensionsv1.ResourceScope, namespaces sets.Set[string]) *plan {
	p := &plan{obj: o}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(o.GroupVersionKind())
	switch err := a.client.Get(ctx, client.ObjectKeyFromObject(o), live); {
	case err == nil:
		p.live = live
	case meta.IsNoMatchError(err):
		if _, ok := crds[o.GroupVersionKind().GroupKind()]; ok {
			return p.postpone("its CustomResourceDefinition is created by this apply; not dry-run")
		}
		return p.fail(fmt.Errorf("the cluster does not serve %s %s, and no CustomResourceDefinition in this set defines it", o.GetAPIVersion(), o.GetKind()))
	case !apierrors.IsNotFound(err):
		return p.fail(fmt.Errorf("reading it from the cluster: %w", err))
	}

	// ssa's Diff removes an invalid caBundle from a CRD in place: Apply
	// sends o as it was dry-run.
	cse, before, after, err := a.rm.Diff(ctx, o, ssa.DiffOptions{Exclusions: skip})
	if err == nil && cse.Action == ssa.SkippedAction {
		p.action = ssa.SkippedAction
		return p
	}
	if owner := live.GetLabels()[LabelApplySetPartOf]; owner != "" && owner != a.opts.Set.ID {
		return p.fail(fmt.Errorf("it belongs to another ApplySet (label %s=%s); cnatctl does not take objects from another set", LabelApplySetPartOf, owner))
	}
	if dryRunErr, ok := errors.AsType[*ssaerrors.DryRunErr](err); ok {
		err = dryRunErr.Unwrap()
	}
	switch {
	case err == nil:
	case p.live == nil && apierrors.IsNotFound(err) && namespaces.Has(o.GetNamespace()):
		return p.postpone("its Namespace is created by this apply; not dry-run")
	case p.live != nil && isImmutableError(err):
		p.action, p.immutable = ActionRecreated, err
		note := "immutable field(s) " + immutableFields(err) + " changed: apply needs --force"
		if holdsData(p.live) {
			note += " --delete-data, and recreating it deletes " + a.dataLoss(ctx, p.live)
		}
		p.notes = append(p.notes, note)
		return p
	default:
		return p.fail(dryRunError(err))
	}
	p.action, p.before, p.after = cse.Action, before, after
	if p.live != nil {
		// What ssa's cleanup changes (see takeover) is a change too.
		managers, err := ssa.PatchReplaceFieldsManagers(p.live, takeover.FieldManagers, cnatv1beta1.CLIFieldManager)
		if err != nil {
			return p.fail(fmt.Errorf("taking over kubectl's fields: %w", err))
		}
		if p.action == ssa.UnchangedAction && len(managers)+len(ssa.PatchRemoveAnnotations(p.live, takeover.Annotations)) > 0 {
			p.action, p.notes = ssa.ConfiguredAction, append(p.notes, "kubectl's fields are taken over")
		}
		if len(managers) > 0 {
			p.applied = append(p.applied, "kubectl's fields taken over")
		}
		if p.conflicts = a.conflicts(ctx, o, p.live); len(p.conflicts) > 0 {
			p.notes = append(p.notes, "conflict: another field manager owns "+strings.Join(p.conflicts, ", ")+" with another value: apply needs --force-conflicts to take them")
			p.applied = append(p.applied, "took "+strings.Join(p.conflicts, ", "))
		}
		fresh, changed, err := a.guarded(ctx, o, p.live)
		if err != nil {
			return p.fail(err)
		}
		if len(changed) > 0 {
			p.action, p.fresh = ssa.ConfiguredAction, fresh
			p.notes = append(p.notes, "admission field(s) "+strings.Join(changed, ", ")+" changed by someone else: apply sets them back")
			p.applied = append(p.applied, "set back admission field(s) "+strings.Join(changed, ", "))
		}
	}
	return p
}

// postpone marks the plan as deferred: the object would be created, but
// could not be dry-run yet.
func (p *plan) postpone(why string) *plan {
	p.action, p.notes, p.deferred = ssa.CreatedAction, []string{why}, true
	return p
}

func (p *plan) fail(err error) *plan {
	*p = plan{obj: p.obj, err: err}
	return p
}

// problems are the plans that keep Apply from starting, by opts.
func (a *Applier) problems(ctx context.Context, plans []*plan, opts ApplyOptions) Problems {
	var problems Problems
	for _, p := range plans {
		switch {
		case p.err != nil:
			problems = append(problems, Problem{Object: Ref(p.obj), Err: p.err})
		case p.immutable != nil && !opts.Force:
			problems = append(problems, Problem{Object: Ref(p.obj), Err: fmt.Errorf("cannot change immutable field(s) %s; apply --force deletes and recreates it: %w", immutableFields(p.immutable), p.immutable)})
		case p.immutable != nil:
			problems = append(problems, a.refuseDataLoss(ctx, []*unstructured.Unstructured{p.live}, "recreating it to change immutable field(s) "+immutableFields(p.immutable), opts.DeleteData)...)
		case len(p.conflicts) > 0 && !opts.ForceConflicts:
			problems = append(problems, Problem{Object: Ref(p.obj), Err: fmt.Errorf("conflict: another field manager owns %s with another value; apply --force-conflicts takes them over (as kubectl apply --server-side --force-conflicts)", strings.Join(p.conflicts, ", "))})
		}
	}
	return problems
}

func dryRunError(err error) error {
	if meta.IsNoMatchError(err) {
		return fmt.Errorf("the cluster does not serve this kind: %w", err)
	}
	return fmt.Errorf("rejected by the API server (dry-run): %w", err)
}

// The messages of a change to an immutable field. Unlike ssa's
// IsImmutableError, a plain Invalid does not count: --force must never
// delete an object because its new version is merely invalid.
var immutableMessage = regexp.MustCompile(`is immutable|immutable field`)

func isImmutableError(err error) bool {
	return (apierrors.IsInvalid(err) || apierrors.IsConflict(err) || apierrors.IsBadRequest(err)) && immutableMessage.MatchString(err.Error())
}

// immutableFields names the fields an immutable-field error is about, from
// the causes of the API server's status, joined with ", "; "(unknown field)"
// if it has none.
func immutableFields(err error) string {
	var fields []string
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil {
		for _, c := range status.Status().Details.Causes {
			if immutableMessage.MatchString(c.Message) && c.Field != "" {
				fields = append(fields, c.Field)
			}
		}
	}
	if len(fields) == 0 {
		return "(unknown field)"
	}
	return strings.Join(fields, ", ")
}
