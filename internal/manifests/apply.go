package manifests

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fluxcd/pkg/ssa"
	ssaerrors "github.com/fluxcd/pkg/ssa/errors"
	"github.com/fluxcd/pkg/ssa/utils"
)

// ActionRecreated is the action of an object deleted and created again for a
// change of an immutable field (--force), beside ssa's actions.
const ActionRecreated = "recreated"

// Entry is what happened, or would happen, to one object: cnatctl prints
// it as "<Ref> <Action>".
type Entry struct{ Ref, Action string }

func (e Entry) String() string { return e.Ref + " " + e.Action }

// ApplyOptions change what Apply does.
type ApplyOptions struct {
	// Force deletes and recreates exactly the objects whose dry-run reported
	// a change to an immutable field; without it nothing is applied then.
	Force bool
	// Prune deletes the members of the set that the objects no longer
	// include, after everything was applied.
	Prune bool
	// Wait waits until every applied object is ready by kstatus (and pruned
	// ones gone), the rest before the webhook configurations are applied.
	Wait bool
	// Timeout bounds each wait, the set's lock's too. Default: 5 minutes.
	Timeout time.Duration
	// DeleteData lets Prune and Force delete objects that hold data (holdsData).
	DeleteData bool
	// ForceConflicts takes over fields another field manager owns with
	// another value; without it they are named and nothing is applied.
	ForceConflicts bool
	// ChangeSource applies the objects although the set's parent records
	// another overlay as their source.
	ChangeSource bool
}

// Result is what Apply did: an entry per object in the order applied, and
// one per pruned object.
type Result struct{ Applied, Pruned []Entry }

// Apply applies objects to the cluster as the set, printing one line per
// object as it goes, in the steps cmd/cnatctl/README.md describes: version
// check, lock, plans (nothing sent if one fails), the parent's inventory, the
// stages (stageOf), then the prune.
func (a *Applier) Apply(ctx context.Context, objects []*unstructured.Unstructured, opts ApplyOptions) (*Result, error) {
	opts.Timeout = cmp.Or(max(opts.Timeout, 0), 5*time.Minute)
	info, err := a.discovery.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("reading the cluster's Kubernetes version, nothing was applied: %w", err)
	}
	if err := checkServerVersion(info); err != nil {
		return nil, fmt.Errorf("%w: nothing was applied", err)
	}
	if opts.Prune && len(objects) == 0 {
		return nil, fmt.Errorf("the overlay renders no objects: with --prune that would delete every object of the set (%s); cnatctl refuses an empty set, nothing was applied", a.opts.Set.ParentRef())
	}
	objs, def, err := a.prepare(objects)
	if err != nil {
		return nil, fmt.Errorf("preparing the objects, nothing was applied: %w", err)
	}
	ctx, unlock, err := a.lock(ctx, opts.Timeout)
	if err != nil {
		return nil, err
	}
	defer unlock()
	previous, err := a.opts.Set.read(ctx, a.client)
	if err != nil {
		return nil, fmt.Errorf("nothing was applied: %w", err)
	}
	if err := a.opts.Set.checkSource(previous.source, opts.ChangeSource); err != nil {
		return nil, fmt.Errorf("%w; nothing was applied", err)
	}
	plans := a.planAll(ctx, objs, def)
	if problems := a.problems(ctx, plans, opts); len(problems) > 0 {
		return nil, fmt.Errorf("dry-run failed, nothing was applied: %w", problems)
	}
	current := a.opts.Set.inventoryOf(objs)
	superset := previous.union(current)
	if opts.Prune {
		candidates, err := a.pruneCandidates(ctx, superset, objs)
		if err != nil {
			return nil, fmt.Errorf("nothing was applied: %w", err)
		}
		if problems := a.refuseDataLoss(ctx, candidates, "pruning (--prune)", opts.DeleteData); len(problems) > 0 {
			return nil, fmt.Errorf("nothing was applied: %w", problems)
		}
	}
	parentPending := false
	if err := a.opts.Set.write(ctx, a.client, superset); err != nil {
		if !apierrors.IsNotFound(err) || !def.namespaces.Has(a.opts.Set.Namespace) {
			return nil, fmt.Errorf("nothing was applied: %w", err)
		}
		parentPending = true // its namespace is created in stage 1
	}

	res := &Result{}
	var stages [3][]*plan
	for _, p := range plans {
		if p.action == ssa.SkippedAction {
			res.Applied = append(res.Applied, a.print(Entry{Ref(p.obj), string(p.action)}))
		} else {
			stages[stageOf(p.obj)] = append(stages[stageOf(p.obj)], p)
		}
	}
	var toWait []*unstructured.Unstructured
	for i, stage := range stages {
		if i == 2 && opts.Wait && len(stage) > 0 {
			if err := a.wait(ctx, toWait, countOf(len(toWait), "object")+" (before the webhook configurations)", opts.Timeout, false); err != nil {
				return res, err
			}
			toWait = nil
		}
		set, changed, err := a.applyStage(ctx, stage, opts.Timeout, res)
		if err != nil {
			return res, err
		}
		if i > 0 {
			toWait = append(toWait, set...)
			continue
		}
		// Always waited for, reported only when something changed.
		if err := a.wait(ctx, set, "CustomResourceDefinitions and Namespaces ("+countOf(len(set), "object")+")", opts.Timeout, !changed); err != nil {
			return res, err
		}
		if parentPending {
			if err := a.opts.Set.write(ctx, a.client, superset); err != nil {
				return res, err
			}
		}
		var deferred []*plan
		for _, p := range plans {
			if p.deferred {
				*p = *a.plan(ctx, p.obj, nil, nil)
				deferred = append(deferred, p)
			}
		}
		if problems := a.problems(ctx, deferred, opts); len(problems) > 0 {
			return res, fmt.Errorf("dry-run of the objects that needed them failed, only CustomResourceDefinitions and Namespaces were applied: %w", problems)
		}
	}
	if opts.Wait {
		if err := a.wait(ctx, toWait, countOf(len(toWait), "object"), opts.Timeout, false); err != nil {
			return res, err
		}
	}

	if !opts.Prune {
		return res, nil
	}
	candidates, err := a.pruneCandidates(ctx, superset, objs)
	if err != nil {
		return res, fmt.Errorf("everything was applied, nothing was pruned: %w", err)
	}
	if problems := a.refuseDataLoss(ctx, candidates, "pruning (--prune)", opts.DeleteData); len(problems) > 0 {
		return res, fmt.Errorf("everything was applied, nothing was pruned: %w", problems)
	}
	if res.Pruned, err = a.prune(ctx, candidates, opts.Wait, opts.Timeout); err != nil {
		return res, fmt.Errorf("everything was applied, but: %w", err)
	}
	if err := a.opts.Set.write(ctx, a.client, current); err != nil {
		return res, fmt.Errorf("everything was applied and pruned, but: %w", err)
	}
	return res, nil
}

// stageOf is an object's stage: 0 CRDs and Namespaces, 1 the rest, 2 webhooks.
func stageOf(o *unstructured.Unstructured) int {
	gk := o.GroupVersionKind().GroupKind()
	switch {
	case utils.IsCRD(o) || utils.IsNamespace(o):
		return 0
	case gk.Group == "admissionregistration.k8s.io" && (gk.Kind == "MutatingWebhookConfiguration" || gk.Kind == "ValidatingWebhookConfiguration"):
		return 2
	}
	return 1
}

// applyStage sends one stage's plans in order, stopping at the first failure,
// and returns the objects to wait for and whether any changed.
func (a *Applier) applyStage(ctx context.Context, plans []*plan, timeout time.Duration, res *Result) ([]*unstructured.Unstructured, bool, error) {
	var set []*unstructured.Unstructured
	changed := false
	for _, p := range plans {
		action, err := a.send(ctx, p, timeout)
		if err != nil {
			return nil, false, fmt.Errorf("applying %s (objects listed above were applied): %w", Ref(p.obj), err)
		}
		e := Entry{Ref(p.obj), string(action)}
		res.Applied = append(res.Applied, e)
		if action == ssa.ConfiguredAction && len(p.applied) > 0 {
			a.printf("%s (%s)\n", e, strings.Join(p.applied, "; "))
		} else {
			a.print(e)
		}
		if action != ssa.SkippedAction {
			set = append(set, p.obj)
			changed = changed || action != ssa.UnchangedAction
		}
	}
	return set, changed, nil
}

// send makes the cluster's object what its plan says by ssa's Apply (never
// given Force: it would recreate on any Invalid error); one planned to be
// recreated is deleted, its UID a precondition, and applied once gone.
func (a *Applier) send(ctx context.Context, p *plan, timeout time.Duration) (ssa.Action, error) {
	if p.action == ssa.UnchangedAction {
		return p.action, nil
	}
	if p.action == ActionRecreated {
		uid := p.live.GetUID()
		err := a.client.Delete(ctx, p.live, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &uid})
		if err != nil && !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("deleting it to recreate it: %w", err)
		}
		if err := a.rm.WaitForTermination([]*unstructured.Unstructured{p.live}, ssa.WaitOptions{Interval: a.opts.PollInterval, Timeout: timeout}); err != nil {
			return "", fmt.Errorf("waiting for it to be deleted before recreating it: %w", err)
		}
	}
	cse, err := a.rm.Apply(ctx, p.obj, ssa.ApplyOptions{ExclusionSelector: skip, Cleanup: takeover})
	if dryRunErr, ok := errors.AsType[*ssaerrors.DryRunErr](err); ok {
		return "", dryRunError(dryRunErr.Unwrap())
	} else if err != nil {
		return "", err
	}
	if p.fresh != nil {
		if err := a.restoreGuarded(ctx, p.fresh, p.obj.GetName()); err != nil {
			return "", err
		}
		return ssa.ConfiguredAction, nil
	}
	if p.action == ActionRecreated && cse.Action == ssa.CreatedAction {
		return ActionRecreated, nil
	}
	return cse.Action, nil
}

// print prints the entry's line and returns the entry.
func (a *Applier) print(e Entry) Entry {
	a.printf("%s\n", e)
	return e
}

// printf writes output, best-effort: a closed stdout fails no apply.
func (a *Applier) printf(format string, args ...any) {
	_, _ = fmt.Fprintf(a.opts.Out, format, args...)
}
