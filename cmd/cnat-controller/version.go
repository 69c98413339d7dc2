package main

import "github.com/programming-kubernetes/cnat/internal/buildinfo"

// version and commit are set at build time with
//
//	-ldflags "-X main.version=v1.2.3 -X main.commit=<git commit>"
//
// as make build and make release (.goreleaser.yaml) do; --version prints
// them, and the controller logs them when it starts.
var (
	version = ""
	commit  = ""
)

func versionLine() string {
	return buildinfo.Line("cnat-controller", buildinfo.Version(version), buildinfo.Commit(commit))
}
