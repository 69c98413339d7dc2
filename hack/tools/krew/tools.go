//go:build tools

// Package krew records the commands this module builds so that
// `go mod tidy` keeps their dependencies.
package krew

import (
	_ "sigs.k8s.io/krew/cmd/krew"
	_ "sigs.k8s.io/krew/cmd/validate-krew-manifest"
)
