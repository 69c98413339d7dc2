//go:build tools

// Package actionlint records the command this module builds so that
// `go mod tidy` keeps its dependencies.
package actionlint

import _ "github.com/rhysd/actionlint/cmd/actionlint"
