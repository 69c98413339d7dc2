package cli

import (
	"strings"
	"testing"
	"time"
)

func TestParseWhen(t *testing.T) {
	now := time.Date(2026, 11, 21, 9, 0, 0, 500_000_000, time.FixedZone("CET", 3600))
	for _, tc := range []struct {
		arg, tz string
		want    when
	}{
		{"+90s", "", when{Schedule: "2026-11-21T08:01:31Z", Instant: time.Date(2026, 11, 21, 8, 1, 31, 0, time.UTC)}},
		{"+1h30m", "", when{Schedule: "2026-11-21T09:30:01Z", Instant: time.Date(2026, 11, 21, 9, 30, 1, 0, time.UTC)}},
		{"2026-11-22T09:00:00Z", "", when{Schedule: "2026-11-22T09:00:00Z", Instant: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)}},
		{"2026-11-22T09:00:00+01:00", "", when{Schedule: "2026-11-22T09:00:00+01:00", Instant: time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)}},
		{"2026-11-22T09:00", "Europe/Berlin", when{Schedule: "2026-11-22T09:00", TimeZone: "Europe/Berlin", Instant: time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)}},
	} {
		got, err := parseWhen(tc.arg, tc.tz, now)
		if err != nil {
			t.Errorf("parseWhen(%q, %q): %v", tc.arg, tc.tz, err)
			continue
		}
		if got.Schedule != tc.want.Schedule || got.TimeZone != tc.want.TimeZone || !got.Instant.Equal(tc.want.Instant) {
			t.Errorf("parseWhen(%q, %q) = %+v, want %+v", tc.arg, tc.tz, got, tc.want)
		}
	}
}

func TestParseWhenErrors(t *testing.T) {
	now := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ arg, tz, want string }{
		{"+0s", "", "positive duration"},
		{"+-5m", "", "positive duration"},
		{"+soon", "", "positive duration"},
		{"+1h", "Europe/Berlin", "--time-zone applies to a wall-clock time"},
		{"2026-11-22T09:00", "", "no UTC offset"},
		{"2026-11-22T09:00", "", "2026-11-22T09:00:00Z"},
		{"tomorrow", "", "not a time cnatctl understands"},
		{"2026-11-22T09:00:00Z", "Europe/Berlin", "spec.schedule"},
		{"2026-11-22T09:00", "Mars/Olympus", "spec.timeZone"},
	} {
		_, err := parseWhen(tc.arg, tc.tz, now)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseWhen(%q, %q) = %v, want an error with %q", tc.arg, tc.tz, err, tc.want)
		}
	}
}

func TestDisplayName(t *testing.T) {
	for argv0, want := range map[string]string{
		"cnatctl":                   "cnatctl",
		"/usr/local/bin/cnatctl":    "cnatctl",
		"/home/me/bin/kubectl-cnat": "kubectl cnat",
		"kubectl-cnat.exe":          "kubectl cnat",
	} {
		if got := displayName(argv0); got != want {
			t.Errorf("displayName(%q) = %q, want %q", argv0, got, want)
		}
	}
}
