package cli

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
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
		t.Run(tc.arg+" "+tc.tz, func(t *testing.T) {
			g := NewWithT(t)
			got, err := parseWhen(tc.arg, tc.tz, now)
			g.Expect(err).NotTo(HaveOccurred())
			// go-cmp compares the instants with time.Time's Equal.
			g.Expect(got).To(BeComparableTo(tc.want))
		})
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
		t.Run(tc.arg+" "+tc.tz+" "+tc.want, func(t *testing.T) {
			g := NewWithT(t)
			_, err := parseWhen(tc.arg, tc.tz, now)
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
}
