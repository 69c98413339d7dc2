package manifests

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fluxcd/cli-utils/pkg/object"
	"github.com/fluxcd/pkg/ssa"
)

// Actions an Entry reports, beyond ssa's created, configured, unchanged,
// deleted and skipped.
const (
	// ActionRecreated: the object changed an immutable field and was
	// deleted and created again (--force).
	ActionRecreated = "recreated"
)

// Entry is what happened, or would happen, to one object.
type Entry struct {
	// Ref names the object: Kind/namespace/name, or Kind/name.
	Ref string
	// Action is created, configured, unchanged, recreated, deleted or
	// skipped.
	Action string
}

// String formats the entry as cnatctl prints it: "<ref> <action>".
func (e Entry) String() string { return e.Ref + " " + e.Action }

// ApplyOptions change what Apply does.
type ApplyOptions struct {
	// Force deletes and recreates the objects whose dry-run reported a
	// change to an immutable field, and no others. Without it such a change
	// fails the dry-run and nothing is applied.
	Force bool
	// Prune deletes the members of the set that the objects no longer
	// include, after everything was applied.
	Prune bool
	// Wait waits, after applying, until every applied object is ready by
	// kstatus (and, with Prune, until pruned objects are gone), and waits
	// for the objects before applying webhook configurations.
	Wait bool
	// Timeout bounds each wait, including the wait for CRDs and Namespaces
	// that Apply always does. Default: 5 minutes.
	Timeout time.Duration
}

// Result is what Apply did.
type Result struct {
	// Applied has one entry per object, in the order applied.
	Applied []Entry
	// Pruned has one entry per pruned object.
	Pruned []Entry
}

// Apply applies objects to the cluster as the set, printing one line per
// object as it goes:
//
//  0. It refuses a cluster older than MinimumKubernetesVersion, naming both
//     versions, before it sends anything else.
//  1. It labels every object as a member of the set and plans all of them:
//     one server-side dry-run each (ssa's Diff, as the apply will send
//     them). If any fails, it returns every failure as Problems and applies
//     nothing. Objects whose CRD or Namespace is created in the same run
//     cannot be dry-run yet: they are planned after stage 1.
//  2. It records the kinds and namespaces of the objects on the set's
//     parent (together with what the parent recorded before), so that an
//     interrupted apply leaks nothing from a later prune.
//  3. Stage 1: CustomResourceDefinitions and Namespaces, then it waits until
//     they are established and active.
//  4. Stage 2: everything else but webhook configurations.
//  5. Stage 3: Mutating- and ValidatingWebhookConfigurations, last, so that
//     a webhook whose backend is not up yet does not block the rest (with
//     Wait, stage 2 must be ready first).
//  6. With Wait, it waits for the rest; with Prune, it deletes the members
//     the objects no longer include and records the new set on the parent.
//
// Each stage sends what the plans say and nothing else: objects that would
// not change are not sent; the others by server-side apply under the
// Applier's field manager, forcing ownership, after taking over the fields
// of kubectl's managers (client-side apply, `kubectl apply --server-side`)
// and removing the last-applied-configuration annotation. With Force, the
// objects whose dry-run reported a change to an immutable field, and only
// those, are deleted and created again.
func (a *Applier) Apply(ctx context.Context, objects []*unstructured.Unstructured, opts ApplyOptions) (*Result, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Minute
	}
	// Before anything else, so an older cluster gets nothing half-applied.
	info, err := a.discovery.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("reading the cluster's Kubernetes version, nothing was applied: %w", err)
	}
	if err := checkServerVersion(info); err != nil {
		return nil, fmt.Errorf("%w: nothing was applied", err)
	}
	objs, err := a.prepare(objects)
	if err != nil {
		return nil, fmt.Errorf("preparing the objects, nothing was applied: %w", err)
	}
	sort.Sort(ssa.SortableUnstructureds(objs))
	previous, err := a.set.read(ctx, a.client)
	if err != nil {
		return nil, fmt.Errorf("nothing was applied: %w", err)
	}
	plans := a.planAll(ctx, objs)
	if problems := problems(plans, opts.Force); len(problems) > 0 {
		return nil, fmt.Errorf("dry-run failed, nothing was applied: %w", problems)
	}

	current := inventoryOf(objs)
	current.namespaces.Insert(a.set.Namespace)
	superset := previous.union(current)
	parentPending := false
	if err := a.set.write(ctx, a.client, superset, a.manager); err != nil {
		if !apierrors.IsNotFound(err) || !namespacesIn(objs)[a.set.Namespace] {
			return nil, fmt.Errorf("nothing was applied: %w", err)
		}
		parentPending = true // its namespace is created in stage 1
	}

	res := &Result{}
	var stage1, stage2, stage3 []*plan
	for _, p := range plans {
		switch {
		case p.action == string(ssa.SkippedAction):
			res.Applied = append(res.Applied, a.print(Entry{Ref: Ref(p.obj), Action: p.action}))
		case isCRD(p.obj) || isNamespace(p.obj):
			stage1 = append(stage1, p)
		case isWebhookConfiguration(p.obj):
			stage3 = append(stage3, p)
		default:
			stage2 = append(stage2, p)
		}
	}

	// Stage 1: definitions, waited for.
	set1, changed, err := a.applyStage(ctx, stage1, opts.Timeout, res)
	if err != nil {
		return res, err
	}
	// Always waited for (definitions that exist are ready at once), but
	// only reported when something changed.
	if err := a.wait(ctx, set1, "CustomResourceDefinitions and Namespaces ("+describeSet(len(set1))+")", opts.Timeout, !changed); err != nil {
		return res, err
	}
	if parentPending {
		if err := a.set.write(ctx, a.client, superset, a.manager); err != nil {
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
	if problems := problems(deferred, opts.Force); len(problems) > 0 {
		return res, fmt.Errorf("dry-run of the objects that needed them failed, only CustomResourceDefinitions and Namespaces were applied: %w", problems)
	}

	// Stage 2: everything else but webhooks.
	set2, _, err := a.applyStage(ctx, stage2, opts.Timeout, res)
	if err != nil {
		return res, err
	}
	waited := false
	if opts.Wait && len(stage3) > 0 {
		if err := a.wait(ctx, set2, describeSet(len(set2))+" (before the webhook configurations)", opts.Timeout, false); err != nil {
			return res, err
		}
		waited = true
	}

	// Stage 3: webhook configurations.
	set3, _, err := a.applyStage(ctx, stage3, opts.Timeout, res)
	if err != nil {
		return res, err
	}
	if opts.Wait {
		rest := set3
		if !waited {
			rest = append(set2, set3...)
		}
		if err := a.wait(ctx, rest, describeSet(len(rest)), opts.Timeout, false); err != nil {
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
	res.Pruned, err = a.prune(ctx, candidates, opts.Wait, opts.Timeout)
	if err != nil {
		return res, fmt.Errorf("everything was applied, but: %w", err)
	}
	if err := a.set.write(ctx, a.client, current, a.manager); err != nil {
		return res, fmt.Errorf("everything was applied and pruned, but: %w", err)
	}
	return res, nil
}

// applyStage sends the plans of one stage in order, printing and recording
// an entry per object, and returns the objects to wait for (all but skipped
// ones) and whether any of them changed.
func (a *Applier) applyStage(ctx context.Context, plans []*plan, timeout time.Duration, res *Result) (object.ObjMetadataSet, bool, error) {
	var set object.ObjMetadataSet
	changed := false
	for _, p := range plans {
		if err := a.send(ctx, p, timeout); err != nil {
			return nil, false, fmt.Errorf("applying %s (objects listed above were applied): %w", Ref(p.obj), err)
		}
		res.Applied = append(res.Applied, a.print(Entry{Ref: Ref(p.obj), Action: p.action}))
		if p.action != string(ssa.SkippedAction) {
			set = append(set, object.UnstructuredToObjMetadata(p.obj))
		}
		if p.action != string(ssa.SkippedAction) && p.action != string(ssa.UnchangedAction) {
			changed = true
		}
	}
	return set, changed, nil
}

// send makes the cluster's object what its plan says. An object planned to
// be recreated is deleted (exactly the one that was dry-run: its UID is a
// precondition) and applied once it is gone.
func (a *Applier) send(ctx context.Context, p *plan, timeout time.Duration) error {
	switch {
	case p.action == string(ssa.UnchangedAction) || p.action == string(ssa.SkippedAction):
		return nil
	case p.action == ActionRecreated:
		uid := p.live.GetUID()
		err := a.client.Delete(ctx, p.live, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &uid})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting it to recreate it: %w", err)
		}
		if err := a.rm.WaitForTermination([]*unstructured.Unstructured{p.live}, ssa.WaitOptions{Interval: a.pollInterval, Timeout: timeout}); err != nil {
			return fmt.Errorf("waiting for it to be deleted before recreating it: %w", err)
		}
	case len(p.takeover) > 0:
		// Only if the object is still the one that was planned.
		ops := []any{map[string]string{"op": "test", "path": "/metadata/resourceVersion", "value": p.live.GetResourceVersion()}}
		for _, op := range p.takeover {
			ops = append(ops, op)
		}
		patch, err := json.Marshal(ops)
		if err != nil {
			return err
		}
		if err := a.client.Patch(ctx, p.live, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(a.manager)); err != nil {
			return fmt.Errorf("taking over kubectl's fields: %w", err)
		}
	}
	return a.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(p.obj.DeepCopy()), client.ForceOwnership, client.FieldOwner(a.manager))
}

// print prints the entry's line and returns the entry.
func (a *Applier) print(e Entry) Entry {
	a.printf("%s\n", e)
	return e
}

// printf writes a line of output. Output is best-effort: a closed stdout
// must not turn a successful apply into a failed one.
func (a *Applier) printf(format string, args ...any) {
	_, _ = fmt.Fprintf(a.out, format, args...)
}
