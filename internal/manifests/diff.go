package manifests

import (
	"context"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

// Diff plans every object as Apply does (one server-side dry-run apply
// each, ssa's Diff, with the set's labels) and prints one line per object,
// "<ref> created|configured|unchanged|recreated|skipped", with a note when
// the dry-run alone does not explain it, plus its diff with Verbose.
// Objects whose CRD or Namespace does not exist yet but is in the set are
// reported as created without a dry-run; a change to an immutable field is
// reported as "recreated" (apply needs --force).
//
// Every object is compared even when some fail: the failures come back
// together as Problems, alongside the result for the others.
func (a *Applier) Diff(ctx context.Context, objects []*unstructured.Unstructured, opts DiffOptions) (*DiffResult, error) {
	objs, err := a.prepare(objects)
	if err != nil {
		return nil, fmt.Errorf("preparing the objects: %w", err)
	}
	sort.Sort(ssa.SortableUnstructureds(objs))
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

	for _, p := range a.planAll(ctx, objs) {
		if p.err != nil {
			problems = append(problems, Problem{Object: Ref(p.obj), Err: p.err})
			continue
		}
		e := DiffEntry{Entry: Entry{Ref: Ref(p.obj), Action: p.action}, Note: p.note}
		switch {
		case !opts.Verbose:
		case p.action == string(ssa.CreatedAction):
			e.Diff = newObjectDiff(p.obj)
		case p.after != nil:
			d, err := unifiedDiff(Ref(p.obj), p.before, p.after)
			if err != nil {
				problems = append(problems, Problem{Object: Ref(p.obj), Err: err})
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
			if utils.AnyInMetadata(c, skip) {
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

// newObjectDiff is the diff of an object that applying would create: the
// whole object.
func newObjectDiff(o *unstructured.Unstructured) string {
	d, err := unifiedDiff(Ref(o), nil, o.DeepCopy())
	if err != nil {
		return err.Error() + "\n"
	}
	return d
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
