package scheduler_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/programming-kubernetes/cnat/internal/scheduler"
)

// FuzzParseSchedule checks ParseSchedule against the standard library's
// parser and against a brute-force search for the instants that show a
// wall-clock time, which shares no code with the resolution it checks.
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
	}
	for _, seed := range seeds {
		f.Add(seed.schedule, seed.timeZone)
	}

	f.Fuzz(func(t *testing.T, schedule, timeZone string) {
		got, err := scheduler.ParseSchedule(schedule, timeZone)
		if err != nil {
			checkScheduleError(t, err, schedule, timeZone)
			return
		}
		if len(schedule) > scheduler.MaxScheduleLength {
			t.Fatalf("ParseSchedule accepted a schedule of %d bytes", len(schedule))
		}
		if year := got.UTC().Year(); year < 1 || year > 9999 {
			t.Fatalf("ParseSchedule(%q, %q) = %v, outside the years 0001 to 9999", schedule, timeZone, got)
		}
		if timeZone == "" {
			checkInstant(t, schedule, got)
		} else {
			checkWallClock(t, schedule, timeZone, got)
		}
	})
}

func checkScheduleError(t *testing.T, err error, schedule, timeZone string) {
	t.Helper()
	var se *scheduler.ScheduleError
	if !errors.As(err, &se) {
		t.Fatalf("ParseSchedule(%q, %q) error %v is a %T, want a *ScheduleError", schedule, timeZone, err, err)
	}
	switch {
	case se.Field == scheduler.FieldSchedule && se.Value == schedule:
	case se.Field == scheduler.FieldTimeZone && se.Value == timeZone:
	default:
		t.Fatalf("ParseSchedule(%q, %q) error names %s=%q, want one of the arguments", schedule, timeZone, se.Field, se.Value)
	}
	if se.Detail == "" {
		t.Fatalf("ParseSchedule(%q, %q) error has no detail", schedule, timeZone)
	}
	if n := len(se.Error()); n > 1024 {
		t.Fatalf("ParseSchedule(%q, %q) error message has %d bytes", schedule, timeZone, n)
	}
}

// checkInstant checks a schedule with an offset: the result must survive a
// round trip through RFC 3339 and agree with time.Parse, which accepts more.
func checkInstant(t *testing.T, schedule string, got time.Time) {
	t.Helper()
	formatted := got.Format(time.RFC3339Nano)
	back, err := time.Parse(time.RFC3339Nano, formatted)
	if err != nil || !back.Equal(got) {
		t.Fatalf("ParseSchedule(%q) = %s, which parses back as %v, %v", schedule, formatted, back, err)
	}
	std, err := time.Parse(time.RFC3339, schedule)
	if err != nil || !std.Equal(got) {
		t.Fatalf("ParseSchedule(%q) = %v, but time.Parse gives %v, %v", schedule, got, std, err)
	}
}

// checkWallClock checks a wall-clock schedule: the result must show the wall
// time, at its earliest occurrence, unless the wall time does not exist, in
// which case the result must be moved forward by the length of the gap.
func checkWallClock(t *testing.T, schedule, timeZone string, got time.Time) {
	t.Helper()
	loc, err := time.LoadLocation(timeZone)
	if err != nil {
		t.Fatalf("ParseSchedule accepted zone %q, which time.LoadLocation rejects: %v", timeZone, err)
	}
	if got.Location().String() != timeZone {
		t.Fatalf("ParseSchedule(%q, %q) is in %s, want the given zone", schedule, timeZone, got.Location())
	}
	layout := "2006-01-02T15:04:05"
	if len(schedule) == len("2006-01-02T15:04") {
		layout = "2006-01-02T15:04"
	}
	wall, err := time.Parse(layout, schedule)
	if err != nil {
		t.Fatalf("ParseSchedule accepted %q, which time.Parse rejects: %v", schedule, err)
	}

	occurrences := instantsShowing(wall, loc)
	if len(occurrences) > 0 {
		if !got.Equal(occurrences[0]) {
			t.Fatalf("ParseSchedule(%q, %q) = %v, want the first occurrence %v", schedule, timeZone, got, occurrences[0].In(loc))
		}
		return
	}
	shift := wallClock(got).Sub(wall)
	if shift <= 0 || shift > 24*time.Hour {
		t.Fatalf("ParseSchedule(%q, %q) = %v, for a time in a gap, want it later by the length of the gap", schedule, timeZone, got)
	}
	_, offsetAfter := got.Zone()
	_, offsetBefore := got.Add(-shift).In(loc).Zone()
	if gap := time.Duration(offsetAfter-offsetBefore) * time.Second; gap != shift {
		t.Fatalf("ParseSchedule(%q, %q) = %v, moved by %v across a gap of %v", schedule, timeZone, got, shift, gap)
	}
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
