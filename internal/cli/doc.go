// Package cli holds cnatctl's commands (cobra), so that cmd/cnatctl only
// wires them to the process: Main runs a command line and returns its exit
// code.
//
// Commands, one file each: build, diff and apply (the overlay commands,
// with the flags they share in setflags.go), at, get, logs and version.
// Connection flags are kubectl's own (k8s.io/cli-runtime's ConfigFlags:
// --kubeconfig, --context, --namespace and the rest), so cnatctl works the
// same as a plain binary and as the kubectl plugin kubectl-cnat.
package cli
