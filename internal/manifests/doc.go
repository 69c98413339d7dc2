// Package manifests renders cnat's kustomize overlays and applies them to a
// cluster the way cnatctl does, with fluxcd/pkg/ssa: a server-side dry run of
// every object first, then apply in stages, an ApplySet (KEP-3659) inventory
// for pruning (docs/architecture.md, "Delivery", has a row per file).
package manifests
