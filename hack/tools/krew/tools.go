//go:build tools

// Package krew records the command this module builds so that
// `go mod tidy` keeps its dependencies.
package krew

import _ "sigs.k8s.io/krew/cmd/validate-krew-manifest"
