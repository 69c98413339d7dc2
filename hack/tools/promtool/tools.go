//go:build tools

// Package promtool records the command this module builds so that
// `go mod tidy` keeps its dependencies.
package promtool

import _ "github.com/prometheus/prometheus/cmd/promtool"
