// Package manifests renders cnat's kustomize overlays and applies them to a
// cluster the way cnatctl does: server-side apply under cnatctl's own field
// manager (fluxcd/pkg/ssa), in stages (CRDs and Namespaces first, webhook
// configurations last), after a server-side dry-run of the whole set, with
// an ApplySet (KEP-3659) inventory that makes pruning safe and that kubectl
// can read.
//
// The pieces, one file each:
//
//   - build.go: Build and BuildYAML render an overlay with kustomize's krusty,
//     exactly as `kustomize build` would, without a cluster.
//   - applier.go: the Applier, its options, and how objects are named and
//     normalised (default namespace, cluster-scoped objects).
//   - preflight.go: the server-side dry-run of the whole set that decides
//     whether an apply may start, and how failures are classified (deferred,
//     immutable, rejected).
//   - apply.go: Apply, the staged apply itself.
//   - diff.go: Diff, the dry-run comparison with the cluster.
//   - prune.go: finding and deleting the members a set no longer has.
//   - applyset.go: the ApplySet parent (id, labels, annotations).
//   - wait.go: waiting for health with kstatus, with progress lines.
//   - problems.go: Problems, the error that lists every failed object.
package manifests
