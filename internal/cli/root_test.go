package cli

import (
	"strings"
	"testing"

	"github.com/programming-kubernetes/cnat/internal/buildinfo"

	. "github.com/onsi/gomega"
)

// TestUsageErrors: a mistake in the command line exits 2 with cobra's
// error and the command's usage (cobra prints it to stdout); an unknown
// command points to --help instead.
func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		argv0 string
		args  []string
		// err is in stderr; usage in stdout.
		err, usage string
	}{
		{"cnatctl", []string{"nope"}, `unknown command "nope" for "cnatctl"` + "\nRun 'cnatctl --help' for usage.", ""},
		{"cnatctl", []string{"at", "+1h"}, "requires at least 2 arg(s), only received 1", "cnatctl at TIME -- COMMAND... [flags]"},
		{"cnatctl", []string{"at", "+1h", "echo", "--", "hi"}, `only TIME goes before --, got ["+1h" "echo"]`, "cnatctl at TIME -- COMMAND... [flags]"},
		{"cnatctl", []string{"at", "next week", "--", "true"}, `"next week" is not a time cnatctl understands`, "cnatctl at TIME -- COMMAND... [flags]"},
		{"cnatctl", []string{"at", "+1h", "--time-zone", "Europe/Berlin", "--", "true"}, "--time-zone applies to a wall-clock time", "cnatctl at TIME -- COMMAND... [flags]"},
		{"kubectl-cnat", []string{"at", "+1h"}, "requires at least 2 arg(s)", "kubectl cnat at TIME -- COMMAND... [flags]"},
		{"cnatctl", []string{"get", "a", "b"}, "accepts at most 1 arg(s), received 2", "cnatctl get [NAME] [flags]"},
		{"cnatctl", []string{"get", "--bogus"}, "unknown flag: --bogus", "cnatctl get [NAME] [flags]"},
		{"cnatctl", []string{"logs"}, "accepts 1 arg(s), received 0", "cnatctl logs AT [--attempt N] [-f] [flags]"},
		{"cnatctl", []string{"logs", "x", "--attempt", "0"}, "--attempt counts from 1, got 0", "cnatctl logs AT [--attempt N] [-f] [flags]"},
		{"cnatctl", []string{"build"}, `required flag(s) "kustomize" not set`, "cnatctl build -k DIR [flags]"},
		{"cnatctl", []string{"apply", "-k", "x", "extra"}, `unknown command "extra" for "cnatctl apply"`, "cnatctl apply -k DIR"},
		{"cnatctl", []string{"version", "extra"}, `unknown command "extra" for "cnatctl version"`, "cnatctl version [flags]"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			g := NewWithT(t)
			out, errOut, code := run(t, tc.argv0, tc.args...)
			g.Expect(code).To(Equal(ExitError))
			g.Expect(errOut).To(HavePrefix("Error: "))
			g.Expect(errOut).To(ContainSubstring(tc.err))
			if tc.usage == "" {
				g.Expect(out).To(BeEmpty())
				return
			}
			g.Expect(out).To(HavePrefix("Usage:\n  " + tc.usage))
		})
	}
}

func TestDisplayName(t *testing.T) {
	g := NewWithT(t)
	for argv0, want := range map[string]string{
		"cnatctl":                   "cnatctl",
		"/usr/local/bin/cnatctl":    "cnatctl",
		"/home/me/bin/kubectl-cnat": "kubectl cnat",
		"kubectl-cnat.exe":          "kubectl cnat",
	} {
		g.Expect(displayName(argv0)).To(Equal(want), argv0)
	}
}

// TestVersion: `version` and `--version` print the version and commit the
// build stamped, under either name.
func TestVersion(t *testing.T) {
	defer func(v, c string) { buildinfo.StampedVersion, buildinfo.StampedCommit = v, c }(buildinfo.StampedVersion, buildinfo.StampedCommit)
	buildinfo.StampedVersion, buildinfo.StampedCommit = "v9.8.7", "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct {
		argv0 string
		args  []string
	}{
		{"cnatctl", []string{"version"}},
		{"cnatctl", []string{"--version"}},
		{"kubectl-cnat", []string{"version"}},
		{"kubectl-cnat", []string{"--version"}},
	} {
		t.Run(tc.argv0+" "+strings.Join(tc.args, " "), func(t *testing.T) {
			g := NewWithT(t)
			out, errOut, code := run(t, tc.argv0, tc.args...)
			g.Expect(code).To(Equal(ExitOK))
			g.Expect(errOut).To(BeEmpty())
			g.Expect(out).To(HavePrefix("cnatctl v9.8.7 (commit 0123456789abcdef0123456789abcdef01234567, go"))
			g.Expect(strings.Count(out, "\n")).To(Equal(1), "one line")
		})
	}
}
