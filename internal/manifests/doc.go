// Package manifests renders cnat's kustomize overlays (build.go) and applies
// them to a cluster the way cnatctl does, with fluxcd/pkg/ssa: one
// server-side dry-run of every object first (plan.go), which Diff prints
// (diff.go) and which must pass before Apply sends anything; then ssa's
// Apply in stages, CRDs and Namespaces first and webhook configurations
// last (apply.go), under cnatctl's own field manager (applier.go); health
// by kstatus (wait.go); an ApplySet (KEP-3659) inventory that kubectl can
// read (applyset.go) and that makes pruning safe (prune.go).
package manifests
