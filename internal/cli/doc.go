// Package cli holds cnatctl's commands (cobra), one file each; Main runs a
// command line and returns its exit code. Connection flags are kubectl's own
// (cli-runtime's ConfigFlags), the same as a binary and as kubectl-cnat.
package cli
