package manifests

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fluxcd/pkg/ssa"
	"github.com/fluxcd/pkg/ssa/utils"
	"github.com/pmezard/go-difflib/difflib"
)

// DiffOptions change what Diff does.
type DiffOptions struct {
	// Verbose adds a unified diff of each changed object's YAML (live
	// against the dry-run result; the whole object for a new one), with
	// Secret data masked.
	Verbose bool
	// Prune also reports the members of the set that `apply --prune` would
	// delete, as "deleted".
	Prune bool
}

// DiffEntry is what applying would do to one object.
type DiffEntry struct {
	Entry
	// Note explains an action that was not found by a dry-run.
	Note string
	// Diff is the unified diff (Verbose only).
	Diff string
}

// DiffResult is what Diff found.
type DiffResult struct {
	// Entries has one entry per object, in apply order, then those that
	// would be pruned.
	Entries []DiffEntry
	// Drift is true if applying would change anything.
	Drift bool
}

// Diff compares every object with the cluster by a server-side dry-run
// apply (ssa's Diff, with the set's labels, as Apply would send it) and
// prints one line per object, "<ref> created|configured|unchanged", plus
// its diff with Verbose. Objects whose CRD or Namespace does not exist yet
// but is in the set are reported as created without a dry-run; a change to
// an immutable field is reported as "recreated" (apply needs --force).
//
// Every object is compared even when some fail: the failures come back
// together as Problems, alongside the result for the others.
func (a *Applier) Diff(ctx context.Context, objects []*unstructured.Unstructured, opts DiffOptions) (*DiffResult, error) {
	objs, err := a.prepare(objects)
	if err != nil {
		return nil, fmt.Errorf("preparing the objects: %w", err)
	}
	sort.Sort(ssa.SortableUnstructureds(objs))
	crds := crdScopes(objs)
	namespaces := namespacesIn(objs)
	res := &DiffResult{}
	var problems Problems
	add := func(e DiffEntry) {
		res.Entries = append(res.Entries, e)
		if e.Action != string(ssa.UnchangedAction) && e.Action != string(ssa.SkippedAction) {
			res.Drift = true
		}
		line := e.String()
		if e.Note != "" {
			line += " (" + e.Note + ")"
		}
		a.printf("%s\n", line)
		if e.Diff != "" {
			a.printf("%s", e.Diff)
		}
	}

	for _, o := range objs {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(o.GroupVersionKind())
		getErr := a.client.Get(ctx, client.ObjectKeyFromObject(o), live)
		_, crdInSet := crds[o.GroupVersionKind().GroupKind()]
		switch {
		case getErr == nil:
			if owner := live.GetLabels()[LabelApplySetPartOf]; owner != "" && owner != a.set.ID && !utils.AnyInMetadata(live, skipSelector()) {
				problems = append(problems, Problem{Object: Ref(o), Err: fmt.Errorf("it belongs to another ApplySet (label %s=%s); cnatctl does not take objects from another set", LabelApplySetPartOf, owner)})
				continue
			}
		case meta.IsNoMatchError(getErr) && crdInSet:
			add(a.newObjectEntry(o, "its CustomResourceDefinition is created by this apply; not dry-run", opts.Verbose))
			continue
		case meta.IsNoMatchError(getErr):
			problems = append(problems, Problem{Object: Ref(o), Err: fmt.Errorf("the cluster does not serve %s %s, and no CustomResourceDefinition in this set defines it", o.GetAPIVersion(), o.GetKind())})
			continue
		case apierrors.IsNotFound(getErr):
		default:
			problems = append(problems, Problem{Object: Ref(o), Err: fmt.Errorf("reading it from the cluster: %w", getErr)})
			continue
		}

		cse, before, after, err := a.rm.Diff(ctx, o.DeepCopy(), ssa.DiffOptions{Exclusions: skipSelector()})
		switch {
		case err == nil:
		case apierrors.IsNotFound(getErr) && apierrors.IsNotFound(err) && namespaces[o.GetNamespace()]:
			add(a.newObjectEntry(o, "its Namespace is created by this apply; not dry-run", opts.Verbose))
			continue
		case getErr == nil && isImmutableError(err):
			add(DiffEntry{
				Entry: Entry{Ref: Ref(o), Action: ActionRecreated},
				Note:  "immutable field(s) " + strings.Join(immutableFields(err), ", ") + " changed: apply needs --force",
			})
			continue
		default:
			problems = append(problems, Problem{Object: Ref(o), Err: dryRunError(err)})
			continue
		}
		e := DiffEntry{Entry: Entry{Ref: cse.Subject, Action: string(cse.Action)}}
		switch {
		case cse.Action == ssa.CreatedAction:
			e = a.newObjectEntry(o, "", opts.Verbose)
		case cse.Action == ssa.ConfiguredAction && opts.Verbose:
			d, err := unifiedDiff(Ref(o), before, after)
			if err != nil {
				problems = append(problems, Problem{Object: Ref(o), Err: err})
			}
			e.Diff = d
		}
		add(e)
	}

	if opts.Prune {
		previous, err := a.set.read(ctx, a.client)
		if err != nil {
			return res, errorsWith(problems, err)
		}
		current := inventoryOf(objs)
		current.namespaces.Insert(a.set.Namespace)
		candidates, err := a.pruneCandidates(ctx, previous.union(current), objs)
		for _, c := range candidates {
			if utils.AnyInMetadata(c, skipSelector()) {
				continue
			}
			add(DiffEntry{Entry: Entry{Ref: Ref(c), Action: string(ssa.DeletedAction)}, Note: "apply --prune deletes it"})
		}
		if err != nil {
			return res, errorsWith(problems, err)
		}
	}
	if len(problems) > 0 {
		return res, problems
	}
	return res, nil
}

// newObjectEntry is the entry of an object that applying would create; with
// verbose its diff adds the whole object.
func (a *Applier) newObjectEntry(o *unstructured.Unstructured, note string, verbose bool) DiffEntry {
	e := DiffEntry{Entry: Entry{Ref: Ref(o), Action: string(ssa.CreatedAction)}, Note: note}
	if verbose {
		d, err := unifiedDiff(Ref(o), nil, o.DeepCopy())
		if err != nil {
			d = err.Error() + "\n"
		}
		e.Diff = d
	}
	return e
}

// unifiedDiff returns the unified diff between the YAML of before (nil: no
// object) and after, with the data of Secrets masked.
func unifiedDiff(ref string, before, after *unstructured.Unstructured) (string, error) {
	if utils.IsSecret(after) {
		if err := ssa.SanitizeUnstructuredData(before, after); err != nil {
			return "", fmt.Errorf("masking Secret data: %w", err)
		}
		for _, u := range []*unstructured.Unstructured{before, after} {
			if u == nil {
				continue
			}
			if sd, ok, _ := unstructured.NestedStringMap(u.Object, "stringData"); ok {
				for k := range sd {
					sd[k] = "***"
				}
				_ = unstructured.SetNestedStringMap(u.Object, sd, "stringData")
			}
		}
	}
	var a, b string
	for _, side := range []struct {
		u   *unstructured.Unstructured
		out *string
	}{{before, &a}, {after, &b}} {
		if side.u == nil {
			continue
		}
		unstructured.RemoveNestedField(side.u.Object, "metadata", "managedFields")
		y, err := yaml.Marshal(side.u.Object)
		if err != nil {
			return "", fmt.Errorf("writing YAML for the diff: %w", err)
		}
		*side.out = string(y)
	}
	from, to := "live/"+ref, "applied/"+ref
	if before == nil {
		from = "/dev/null"
	}
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A:        difflib.SplitLines(a),
		B:        difflib.SplitLines(b),
		FromFile: from,
		ToFile:   to,
		Context:  3,
	})
}

// errorsWith adds err to problems, as one error.
func errorsWith(problems Problems, err error) error {
	if len(problems) == 0 {
		return err
	}
	return fmt.Errorf("%w\n%w", problems, err)
}
