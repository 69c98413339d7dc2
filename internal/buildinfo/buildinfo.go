// Package buildinfo tells which version of cnat a binary is and which
// commit it was built from, for cnatctl's and the controller's --version.
//
// Each binary has its own two variables the release build sets with
// -ldflags -X (internal/cli.version and .commit for cnatctl, main.version
// and main.commit for cnat-controller; see .goreleaser.yaml); these
// functions fall back on what the Go toolchain recorded in the binary when
// they are empty, as in a plain go build or go install.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Version returns stamped when set, else the module version go install
// recorded, else v0.0.0-devel.
func Version(stamped string) string {
	if stamped != "" {
		return stamped
	}
	if info, ok := debug.ReadBuildInfo(); ok && strings.HasPrefix(info.Main.Version, "v") {
		return info.Main.Version
	}
	return "v0.0.0-devel"
}

// Commit returns stamped when set, else the commit go build recorded
// (vcs.revision, with -dirty when the work tree had changes), else unknown.
func Commit(stamped string) string {
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

// Line is the one line both binaries print for --version: the program, its
// version (the second field, for scripts), the commit, the Go version and
// the platform.
func Line(program, version, commit string) string {
	return fmt.Sprintf("%s %s (commit %s, %s %s/%s)\n", program, version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
