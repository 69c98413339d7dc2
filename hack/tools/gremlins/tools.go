//go:build tools

// Package gremlins records the command this module builds so that
// `go mod tidy` keeps its dependencies.
package gremlins

import _ "github.com/go-gremlins/gremlins/cmd/gremlins"
