package scheduler_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/programming-kubernetes/cnat/internal/scheduler"
)

// FuzzParseSchedule checks that ParseSchedule accepts exactly the schedules
// of the documented grammar, read as the standard library reads them, and
// checks wall-clock times against a brute-force search for the instants
// that show them, which shares no code with the resolution it checks.
func FuzzParseSchedule(f *testing.F) {
	seeds := []struct{ schedule, timeZone string }{
		{"2026-11-21T09:00:00Z", ""},
		{"2026-11-21T09:00:00+05:30", ""},
		{"2026-11-21T09:00:00-08:00", ""},
		{"2026-11-21T09:00:00.123456789+01:00", ""},
		{"0001-01-01T00:00:00Z", ""},
		{"9999-12-31T23:59:59.999999999Z", ""},
		{"2026-11-21T09:00:00", "Europe/Berlin"},
		{"2026-11-21T09:00", "Asia/Tokyo"},
		{"2026-03-29T02:30", "Europe/Berlin"},
		{"2026-10-25T02:30", "Europe/Berlin"},
		{"2026-03-08T02:30", "America/New_York"},
		{"2026-11-01T01:30", "America/New_York"},
		{"2026-10-04T02:15", "Australia/Lord_Howe"},
		{"2026-04-05T01:45", "Australia/Lord_Howe"},
		{"2011-12-30T12:00", "Pacific/Apia"},
		{"2014-10-26T01:30", "Europe/Moscow"},
		{"tomorrow", ""},
		{"", ""},
		{"2026-11-21t09:00:00z", ""},
		{"2026-11-21T09:00:00", ""},
		{"2026-11-21T09:00:00+01:00", "Europe/Berlin"},
		{"2026-11-21T09:00", "Local"},
		{"2026-11-21T09:00", "Mars/Olympus_Mons"},
		{"2026-02-29T24:60:60+24:60", ""},
		{"0001-01-01T00:00:00+01:00", ""},
		{"10000-01-01T00:00:00Z", ""},
		{"2026-11-21T09:00:00Z                                             ", ""},
		// What time.Parse accepts and the grammar does not.
		{"2026-11-21T9:00:00Z", ""},
		{"2026-11-21T09:00:00,5Z", ""},
		{"2026-11-21T09:00:00.1234567891Z", ""},
		{"2026-11-21T09:00:00+24:00", ""},
		{"2026-11-21T09:00:00-01:60", ""},
		{"0000-12-31T23:30:00-01:00", ""},
		{"0000-12-31T23:30", "America/New_York"},
		{"2026-11-21T9:00", "Europe/Berlin"},
		{"2026-11-21T09:00:00,5", "Europe/Berlin"},
	}
	for _, seed := range seeds {
		f.Add(seed.schedule, seed.timeZone)
	}

	f.Fuzz(func(t *testing.T, schedule, timeZone string) {
		g := NewWithT(t)
		got, err := scheduler.ParseSchedule(schedule, timeZone)
		written, documented := documentedSchedule(schedule, timeZone != "")
		if err != nil {
			arg := checkScheduleError(g, err, schedule, timeZone)
			if arg == argSchedule && documented {
				// Only the year in UTC can refuse a documented schedule, and
				// only on the first or last day of the range: offsets are
				// smaller than a day.
				g.Expect(err).To(MatchError(ContainSubstring("the time falls outside the years 0001 to 9999 in UTC")), "refuses the documented %q, %q", schedule, timeZone)
				g.Expect(written.Format(time.DateOnly)).To(BeElementOf("0001-01-01", "9999-12-31"))
			}
			return
		}
		g.Expect(len(schedule)).To(BeNumerically("<=", scheduler.MaxScheduleLength), "the length of an accepted schedule")
		g.Expect(documented).To(BeTrue(), "ParseSchedule(%q, %q) accepts what the documented grammar does not", schedule, timeZone)
		g.Expect(got.UTC().Year()).To(BeNumerically(">=", 1), "ParseSchedule(%q, %q) = %v, in the years 0001 to 9999", schedule, timeZone, got)
		g.Expect(got.UTC().Year()).To(BeNumerically("<=", 9999), "ParseSchedule(%q, %q) = %v, in the years 0001 to 9999", schedule, timeZone, got)
		if timeZone == "" {
			checkInstant(g, schedule, got, written)
		} else {
			checkWallClock(g, schedule, timeZone, got, written)
		}
	})
}

// documentedSchedule reads schedule by the grammar the package documents,
// sharing the standard library with ParseSchedule but not its pattern or
// checks: a documented schedule is, byte for byte and up to the spelling of
// a zero offset, what formatting the time it denotes gives, with seconds and
// an offset without a time zone, without an offset with one. It returns the
// time as written (in the written offset, or in UTC as a stand-in for a
// wall-clock time) and whether schedule is one; the year in UTC is left to
// the caller.
func documentedSchedule(schedule string, zoned bool) (time.Time, bool) {
	seconds := []string{":05"}
	for fraction := ".0"; len(fraction) <= 10; fraction += "0" {
		seconds = append(seconds, ":05"+fraction)
	}
	offsets := []string{"Z07:00", "-07:00"} // "Z" or "+00:00" for a zero offset
	if zoned {
		seconds = append(seconds, "")
		offsets = []string{""}
	}
	for _, sec := range seconds {
		for _, offset := range offsets {
			layout := "2006-01-02T15:04" + sec + offset
			t, err := time.ParseInLocation(layout, schedule, time.UTC)
			if err != nil {
				continue
			}
			formatted := t.Format(layout)
			if zero, ok := strings.CutSuffix(formatted, "+00:00"); ok && schedule == zero+"-00:00" {
				formatted = schedule // RFC 3339's "unknown local offset"
			}
			if _, zone := t.Zone(); formatted == schedule && t.Year() >= 1 && -24*3600 < zone && zone < 24*3600 {
				return t, true
			}
		}
	}
	return time.Time{}, false
}

// checkScheduleError checks that an error names one of the arguments, the
// way the callers that name the field read it, and returns the argument.
func checkScheduleError(g Gomega, err error, schedule, timeZone string) string {
	arg, value, detail := argOf(err)
	switch arg {
	case argSchedule:
		g.Expect(value).To(Equal(schedule), "the value a schedule error names")
	case argTimeZone:
		g.Expect(value).To(Equal(timeZone), "the value a time zone error names")
	default:
		g.Expect(err).To(BeNil(), "ParseSchedule(%q, %q) returns a *ScheduleError or *TimeZoneError", schedule, timeZone)
	}
	g.Expect(detail).NotTo(BeEmpty(), "ParseSchedule(%q, %q) error has a detail", schedule, timeZone)
	g.Expect(len(err.Error())).To(BeNumerically("<=", 1024), "the length of the error message")
	return arg
}

// checkInstant checks a schedule with an offset: the result must be the
// documented reading, offset included, survive a round trip through
// RFC 3339 and agree with time.Parse, which accepts more.
func checkInstant(g Gomega, schedule string, got, written time.Time) {
	g.Expect(got.Format(time.RFC3339Nano)).To(Equal(written.Format(time.RFC3339Nano)), "ParseSchedule(%q)", schedule)
	formatted := got.Format(time.RFC3339Nano)
	back, err := time.Parse(time.RFC3339Nano, formatted)
	g.Expect(err).NotTo(HaveOccurred(), "ParseSchedule(%q) = %s parses back", schedule, formatted)
	g.Expect(back.Equal(got)).To(BeTrue(), "ParseSchedule(%q) = %s parses back as %v", schedule, formatted, back)
	std, err := time.Parse(time.RFC3339, schedule)
	g.Expect(err).NotTo(HaveOccurred(), "time.Parse(%q)", schedule)
	g.Expect(std.Equal(got)).To(BeTrue(), "ParseSchedule(%q) = %v, but time.Parse gives %v", schedule, got, std)
}

// checkWallClock checks a wall-clock schedule: the result must show the wall
// time, at its earliest occurrence, unless the wall time does not exist, in
// which case the result must be moved forward by the length of the gap.
func checkWallClock(g Gomega, schedule, timeZone string, got, wall time.Time) {
	loc, err := time.LoadLocation(timeZone)
	g.Expect(err).NotTo(HaveOccurred(), "ParseSchedule accepted zone %q, which time.LoadLocation rejects", timeZone)
	g.Expect(got.Location().String()).To(Equal(timeZone), "ParseSchedule(%q, %q) is in the given zone", schedule, timeZone)

	occurrences := instantsShowing(wall, loc)
	if len(occurrences) > 0 {
		g.Expect(got.Equal(occurrences[0])).To(BeTrue(), "ParseSchedule(%q, %q) = %v, want the first occurrence %v", schedule, timeZone, got, occurrences[0].In(loc))
		return
	}
	shift := wallClock(got).Sub(wall)
	g.Expect(shift).To(And(BeNumerically(">", 0), BeNumerically("<=", 24*time.Hour)), "ParseSchedule(%q, %q) = %v, for a time in a gap, want it later by the length of the gap", schedule, timeZone, got)
	_, offsetAfter := got.Zone()
	_, offsetBefore := got.Add(-shift).In(loc).Zone()
	g.Expect(time.Duration(offsetAfter-offsetBefore)*time.Second).To(Equal(shift), "ParseSchedule(%q, %q) = %v, moved by the length of the gap", schedule, timeZone, got)
}

// instantsShowing returns, in order, the instants at which clocks in loc
// show the date and time of day that wall has in UTC. It tries the offset in
// force every quarter of an hour from 26 hours before wall to 26 hours after,
// which covers every offset in the tz database.
func instantsShowing(wall time.Time, loc *time.Location) []time.Time {
	var found []time.Time
	seen := map[int]bool{}
	for d := -26 * time.Hour; d <= 26*time.Hour; d += 15 * time.Minute {
		_, offset := wall.Add(d).In(loc).Zone()
		if seen[offset] {
			continue
		}
		seen[offset] = true
		candidate := wall.Add(-time.Duration(offset) * time.Second)
		if wallClock(candidate.In(loc)).Equal(wall) {
			found = append(found, candidate)
		}
	}
	slices.SortFunc(found, time.Time.Compare)
	return found
}

// wallClock returns the date and time of day t shows, as the UTC instant
// with the same fields.
func wallClock(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}
