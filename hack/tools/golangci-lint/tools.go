//go:build tools

// Package golangcilint records the command this module builds so that
// `go mod tidy` keeps its dependencies.
package golangcilint

import _ "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
