// Package manifests renders cnat's kustomize overlays and applies them to a
// cluster the way cnatctl does: server-side apply under cnatctl's own field
// manager, in stages (CRDs and Namespaces first, webhook configurations
// last), after one server-side dry-run of every object (fluxcd/pkg/ssa's
// Diff), with an ApplySet (KEP-3659) inventory that makes pruning safe and
// that kubectl can read.
//
// The pieces, one file each:
//
//   - build.go: Build and BuildYAML render an overlay with kustomize's krusty,
//     exactly as `kustomize build` would, without a cluster.
//   - applier.go: the Applier, its options, and how objects are named and
//     normalised (default namespace, cluster-scoped objects).
//   - plan.go: the plan of each object, from one server-side dry-run: what
//     applying does to it (created, configured, unchanged, skipped,
//     recreated, or deferred until its CRD or Namespace exists) or why it
//     cannot be applied. Diff and Apply share it.
//   - apply.go: Apply, which sends the plans in stages.
//   - diff.go: Diff, which prints the plans.
//   - prune.go: finding and deleting the members a set no longer has.
//   - applyset.go: the ApplySet parent (id, labels, annotations).
//   - wait.go: waiting for health with kstatus, with progress lines.
//   - problems.go: Problems, the error that lists every failed object.
package manifests
