//go:build tools

// Package kubescore records the command this module builds so that
// `go mod tidy` keeps its dependencies.
package kubescore

import _ "github.com/zegl/kube-score/cmd/kube-score"
