package buildinfo

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestStampedWins(t *testing.T) {
	if got := versionOr("v1.2.3"); got != "v1.2.3" {
		t.Errorf("Version(v1.2.3) = %q", got)
	}
	if got := commitOr("0123abc"); got != "0123abc" {
		t.Errorf("Commit(0123abc) = %q", got)
	}
}

func TestUnstamped(t *testing.T) {
	// A test binary records no module version and no VCS settings.
	if got := versionOr(""); got != "v0.0.0-devel" {
		t.Errorf("Version(\"\") = %q, want v0.0.0-devel", got)
	}
	if got := commitOr(""); got != "unknown" {
		t.Errorf("Commit(\"\") = %q, want unknown", got)
	}
}

func TestCommitOf(t *testing.T) {
	for _, tc := range []struct {
		settings []debug.BuildSetting
		want     string
	}{
		{nil, "unknown"},
		{[]debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}}, "abc"},
		{[]debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}}, "abc"},
		{[]debug.BuildSetting{{Key: "vcs.modified", Value: "true"}, {Key: "vcs.revision", Value: "abc"}}, "abc-dirty"},
		{[]debug.BuildSetting{{Key: "vcs.modified", Value: "true"}}, "unknown"},
	} {
		if got := commitOf(tc.settings); got != tc.want {
			t.Errorf("commitOf(%v) = %q, want %q", tc.settings, got, tc.want)
		}
	}
}

func TestLine(t *testing.T) {
	want := "cnatctl v1.2.3 (commit abc, " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")\n"
	StampedVersion, StampedCommit = "v1.2.3", "abc"
	t.Cleanup(func() { StampedVersion, StampedCommit = "", "" })
	if got := Line("cnatctl"); got != want {
		t.Errorf("Line = %q, want %q", got, want)
	}
}
