// Package testenv holds what cnat's envtest suites share: where the API
// server binaries and the repository's manifests are.
package testenv

import (
	"os"
	"path/filepath"
	"runtime"
)

// RepoRoot is the repository's top directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// BinaryAssetsDirectory is where kube-apiserver, etcd and kubectl are:
// $KUBEBUILDER_ASSETS if set, else the repository's bin/ (make tools).
func BinaryAssetsDirectory() string {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir
	}
	return filepath.Join(RepoRoot(), "bin")
}
