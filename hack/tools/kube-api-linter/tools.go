//go:build tools

// Package kubeapilinter records the command this module builds so that
// `go mod tidy` keeps its dependencies.
package kubeapilinter

import _ "sigs.k8s.io/kube-api-linter/cmd/golangci-lint-kube-api-linter"
