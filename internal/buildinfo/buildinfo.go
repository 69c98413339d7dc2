// Package buildinfo tells which version of cnat a binary is and which commit
// it was built from: stamped by the release's -ldflags -X, else what the Go
// toolchain recorded.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// StampedVersion and StampedCommit are set at build time with
//
//	-ldflags "-X github.com/programming-kubernetes/cnat/internal/buildinfo.StampedVersion=v1.2.3
//	          -X github.com/programming-kubernetes/cnat/internal/buildinfo.StampedCommit=<git commit>"
var (
	StampedVersion = ""
	StampedCommit  = ""
)

// Version is the binary's version: the one set at build time, else the
// module version go install recorded, else v0.0.0-devel.
func Version() string { return versionOr(StampedVersion) }

// Commit is the commit the binary was built from: the one set at build
// time, else the one go build recorded, else unknown.
func Commit() string { return commitOr(StampedCommit) }

// versionOr is Version with stamped for StampedVersion.
func versionOr(stamped string) string {
	if stamped != "" {
		return stamped
	}
	if info, ok := debug.ReadBuildInfo(); ok && strings.HasPrefix(info.Main.Version, "v") {
		return info.Main.Version
	}
	return "v0.0.0-devel"
}

// commitOr is Commit with stamped for StampedCommit (-dirty for a changed tree).
func commitOr(stamped string) string {
	if stamped != "" {
		return stamped
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return commitOf(info.Settings)
}

func commitOf(settings []debug.BuildSetting) string {
	revision, dirty := "", false
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	switch {
	case revision == "":
		return "unknown"
	case dirty:
		return revision + "-dirty"
	default:
		return revision
	}
}

// Line is the one line both binaries print for --version (the version second, for scripts).
func Line(program string) string {
	return fmt.Sprintf("%s %s (commit %s, %s %s/%s)\n", program, Version(), Commit(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
