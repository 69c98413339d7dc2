//go:build tools

// Package goreleaser records the command this module builds so that
// `go mod tidy` keeps its dependencies.
package goreleaser

import _ "github.com/goreleaser/goreleaser/v2"
