//go:build tools

// Package kwok records the kwok commands this module builds so that
// `go mod tidy` keeps their dependencies.
package kwok

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
	_ "sigs.k8s.io/kwok/cmd/kwokctl"
)
