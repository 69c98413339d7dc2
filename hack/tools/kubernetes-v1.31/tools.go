//go:build tools

// Package kubernetes records the Kubernetes command this module builds so
// that `go mod tidy` keeps its dependencies: only kube-apiserver, the server
// the version gate of cnatctl apply is tried against.
package kubernetes

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
