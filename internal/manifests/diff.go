package manifests

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/fluxcd/pkg/ssa"
	"github.com/fluxcd/pkg/ssa/utils"
	"github.com/pmezard/go-difflib/difflib"
)

// DiffOptions change what Diff does.
type DiffOptions struct {
	// Verbose adds a unified diff of each changed object, Secret data masked.
	Verbose bool
	// Prune also reports what `apply --prune` would delete.
	Prune bool
}

// DiffEntry is what applying would do to one object, with a Note when the
// dry-run alone does not explain it and, with Verbose, the unified Diff.
type DiffEntry struct {
	Entry
	Note, Diff string
}

// DiffResult is what Diff found: an entry per object in apply order, then
// those that would be pruned; Drift if applying would change anything.
type DiffResult struct {
	Entries []DiffEntry
	Drift   bool
}

// Diff plans every object as Apply does and prints one line per object;
// failures come back together as Problems, beside the others' result.
func (a *Applier) Diff(ctx context.Context, objects []*unstructured.Unstructured, opts DiffOptions) (*DiffResult, error) {
	objs, def, err := a.prepare(objects)
	if err != nil {
		return nil, fmt.Errorf("preparing the objects: %w", err)
	}
	res := &DiffResult{}
	var problems Problems
	add := func(e DiffEntry) {
		res.Entries = append(res.Entries, e)
		res.Drift = res.Drift || e.Action != string(ssa.UnchangedAction) && e.Action != string(ssa.SkippedAction)
		if e.Note != "" {
			e.Note = " (" + e.Note + ")"
		}
		a.printf("%s%s\n%s", e, e.Note, e.Diff)
	}

	for _, p := range a.planAll(ctx, objs, def) {
		if p.err != nil {
			problems = append(problems, Problem{Ref(p.obj), p.err})
			continue
		}
		e := DiffEntry{Entry: Entry{Ref(p.obj), string(p.action)}, Note: strings.Join(p.notes, "; ")}
		switch {
		case !opts.Verbose:
		case p.action == ssa.CreatedAction:
			if e.Diff, err = unifiedDiff(Ref(p.obj), nil, p.obj.DeepCopy()); err != nil {
				e.Diff = err.Error() + "\n"
			}
		case p.after != nil:
			if e.Diff, err = unifiedDiff(Ref(p.obj), p.before, p.after); err != nil {
				problems = append(problems, Problem{Ref(p.obj), err})
			}
		}
		add(e)
	}

	var pruneErr error
	if opts.Prune {
		var previous *inventory
		var candidates []*unstructured.Unstructured
		if previous, pruneErr = a.opts.Set.read(ctx, a.client); pruneErr == nil {
			candidates, pruneErr = a.pruneCandidates(ctx, previous.union(a.opts.Set.inventoryOf(objs)), objs)
			if err := a.opts.Set.checkSource(previous.source, false); err != nil {
				res.Drift = true
				a.printf("%s\n", err)
			}
		}
		for _, c := range candidates {
			switch {
			case utils.AnyInMetadata(c, skip):
			case holdsData(c):
				add(DiffEntry{Entry: Entry{Ref(c), string(ssa.DeletedAction)}, Note: "apply --prune deletes it only with --delete-data, and with it " + a.dataLoss(ctx, c)})
			default:
				add(DiffEntry{Entry: Entry{Ref(c), string(ssa.DeletedAction)}, Note: "apply --prune deletes it"})
			}
		}
	}
	if len(problems) > 0 {
		return res, errors.Join(problems, pruneErr)
	}
	return res, pruneErr
}

// unifiedDiff returns the unified diff of before (nil: none) and after,
// without managed fields, Secret data masked.
func unifiedDiff(ref string, before, after *unstructured.Unstructured) (string, error) {
	if utils.IsSecret(after) {
		if err := ssa.SanitizeUnstructuredData(before, after); err != nil {
			return "", fmt.Errorf("masking Secret data: %w", err)
		}
	}
	var text [2]string
	for i, u := range []*unstructured.Unstructured{before, after} {
		if u == nil {
			continue
		}
		unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
		if sd, ok, _ := unstructured.NestedStringMap(u.Object, "stringData"); ok && utils.IsSecret(after) {
			for k := range sd {
				sd[k] = "***"
			}
			_ = unstructured.SetNestedStringMap(u.Object, sd, "stringData")
		}
		y, err := yaml.Marshal(u.Object)
		if err != nil {
			return "", fmt.Errorf("writing YAML for the diff: %w", err)
		}
		text[i] = string(y)
	}
	from := "live/" + ref
	if before == nil {
		from = "/dev/null"
	}
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(text[0]), B: difflib.SplitLines(text[1]),
		FromFile: from, ToFile: "applied/" + ref, Context: 3,
	})
}
