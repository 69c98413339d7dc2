package scheduler_test

import (
	"errors"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // Resolve zones even where the machine has no tz database.

	. "github.com/onsi/gomega"

	"github.com/programming-kubernetes/cnat/internal/scheduler"
)

// The arguments of ParseSchedule an error can be about.
const (
	argSchedule = "schedule"
	argTimeZone = "timeZone"
)

// argOf returns the argument a scheduler error is about, the value it
// rejects and what it says about it, the way the callers that name the
// field read them; it returns empty strings for any other error.
func argOf(err error) (arg, value, detail string) {
	var se *scheduler.ScheduleError
	var ze *scheduler.TimeZoneError
	switch {
	case errors.As(err, &se):
		return argSchedule, se.Value, se.Detail
	case errors.As(err, &ze):
		return argTimeZone, ze.Value, ze.Detail
	}
	return "", "", ""
}

func TestParseSchedule(t *testing.T) {
	tests := []struct {
		name     string
		schedule string
		timeZone string
		// want is the expected result formatted with RFC 3339 in its own
		// location, which pins both the instant and the offset shown.
		want string
	}{
		{name: "UTC", schedule: "2026-11-21T09:00:00Z", want: "2026-11-21T09:00:00Z"},
		{name: "positive offset", schedule: "2026-11-21T09:00:00+01:00", want: "2026-11-21T09:00:00+01:00"},
		{name: "half-hour offset", schedule: "2026-11-21T09:00:00+05:30", want: "2026-11-21T09:00:00+05:30"},
		{name: "negative offset", schedule: "2026-11-21T09:00:00-08:00", want: "2026-11-21T09:00:00-08:00"},
		{name: "zero offset is UTC", schedule: "2026-11-21T09:00:00+00:00", want: "2026-11-21T09:00:00Z"},
		{name: "unknown local offset is UTC", schedule: "2026-11-21T09:00:00-00:00", want: "2026-11-21T09:00:00Z"},
		{name: "fractional second", schedule: "2026-11-21T09:00:00.5Z", want: "2026-11-21T09:00:00.5Z"},
		{name: "nanoseconds", schedule: "2026-11-21T09:00:00.123456789+01:00", want: "2026-11-21T09:00:00.123456789+01:00"},
		{name: "leap day", schedule: "2028-02-29T12:00:00Z", want: "2028-02-29T12:00:00Z"},
		{name: "first instant", schedule: "0001-01-01T00:00:00Z", want: "0001-01-01T00:00:00Z"},
		{name: "last instant", schedule: "9999-12-31T23:59:59.999999999Z", want: "9999-12-31T23:59:59.999999999Z"},

		{name: "zone", schedule: "2026-11-21T09:00:00", timeZone: "Europe/Berlin", want: "2026-11-21T09:00:00+01:00"},
		{name: "zone without seconds", schedule: "2026-11-21T09:00", timeZone: "Europe/Berlin", want: "2026-11-21T09:00:00+01:00"},
		{name: "zone with fractional second", schedule: "2026-11-21T09:00:00.25", timeZone: "Europe/Berlin", want: "2026-11-21T09:00:00.25+01:00"},
		{name: "zone UTC", schedule: "2026-11-21T09:00", timeZone: "UTC", want: "2026-11-21T09:00:00Z"},
		{name: "zone without DST", schedule: "2026-11-21T09:00", timeZone: "Asia/Tokyo", want: "2026-11-21T09:00:00+09:00"},
		{name: "zone without DST on a European change day", schedule: "2026-03-29T02:30", timeZone: "Asia/Tokyo", want: "2026-03-29T02:30:00+09:00"},

		// Europe/Berlin springs forward on 2026-03-29 at 02:00 (01:00Z)
		// and falls back on 2026-10-25 at 03:00 (01:00Z).
		{name: "Berlin before gap", schedule: "2026-03-29T01:59:59.999999999", timeZone: "Europe/Berlin", want: "2026-03-29T01:59:59.999999999+01:00"},
		{name: "Berlin gap start", schedule: "2026-03-29T02:00", timeZone: "Europe/Berlin", want: "2026-03-29T03:00:00+02:00"}, // 01:00Z
		{name: "Berlin gap", schedule: "2026-03-29T02:30", timeZone: "Europe/Berlin", want: "2026-03-29T03:30:00+02:00"},       // 01:30Z
		{name: "Berlin after gap", schedule: "2026-03-29T03:00", timeZone: "Europe/Berlin", want: "2026-03-29T03:00:00+02:00"},
		{name: "Berlin before overlap", schedule: "2026-10-25T01:59:59", timeZone: "Europe/Berlin", want: "2026-10-25T01:59:59+02:00"},
		{name: "Berlin overlap start", schedule: "2026-10-25T02:00", timeZone: "Europe/Berlin", want: "2026-10-25T02:00:00+02:00"}, // 00:00Z
		{name: "Berlin overlap", schedule: "2026-10-25T02:30", timeZone: "Europe/Berlin", want: "2026-10-25T02:30:00+02:00"},       // 00:30Z
		{name: "Berlin overlap end", schedule: "2026-10-25T02:59:59.999999999", timeZone: "Europe/Berlin", want: "2026-10-25T02:59:59.999999999+02:00"},
		{name: "Berlin after overlap", schedule: "2026-10-25T03:00", timeZone: "Europe/Berlin", want: "2026-10-25T03:00:00+01:00"}, // 02:00Z

		// America/New_York springs forward on 2026-03-08 at 02:00 (07:00Z)
		// and falls back on 2026-11-01 at 02:00 (06:00Z).
		{name: "New York gap", schedule: "2026-03-08T02:30", timeZone: "America/New_York", want: "2026-03-08T03:30:00-04:00"},           // 07:30Z
		{name: "New York overlap", schedule: "2026-11-01T01:30", timeZone: "America/New_York", want: "2026-11-01T01:30:00-04:00"},       // 05:30Z
		{name: "New York after overlap", schedule: "2026-11-01T02:00", timeZone: "America/New_York", want: "2026-11-01T02:00:00-05:00"}, // 07:00Z

		// Australia/Lord_Howe shifts by 30 minutes: back from 02:00+11:00 to
		// 01:30+10:30 on 2026-04-05, forward from 02:00+10:30 to 02:30+11:00
		// on 2026-10-04.
		{name: "Lord Howe overlap", schedule: "2026-04-05T01:45", timeZone: "Australia/Lord_Howe", want: "2026-04-05T01:45:00+11:00"}, // 2026-04-04T14:45Z
		{name: "Lord Howe gap", schedule: "2026-10-04T02:15", timeZone: "Australia/Lord_Howe", want: "2026-10-04T02:45:00+11:00"},     // 2026-10-03T15:45Z

		// Permanent offset changes.
		{name: "Samoa skipped day", schedule: "2011-12-30T12:00", timeZone: "Pacific/Apia", want: "2011-12-31T12:00:00+14:00"},      // 2011-12-30T22:00Z
		{name: "Moscow to +04:00", schedule: "2011-03-27T02:30", timeZone: "Europe/Moscow", want: "2011-03-27T03:30:00+04:00"},      // 2011-03-26T23:30Z
		{name: "Moscow back to +03:00", schedule: "2014-10-26T01:30", timeZone: "Europe/Moscow", want: "2014-10-26T01:30:00+04:00"}, // 2014-10-25T21:30Z
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := scheduler.ParseSchedule(tt.schedule, tt.timeZone)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Format(time.RFC3339Nano)).To(Equal(tt.want))
			if tt.timeZone != "" {
				g.Expect(got.Location().String()).To(Equal(tt.timeZone), "in the given zone")
			}
		})
	}
}

func TestParseScheduleErrors(t *testing.T) {
	tests := []struct {
		name     string
		schedule string
		timeZone string
		wantArg  string
		// wantProblem must appear in the error's Detail.
		wantProblem string
	}{
		{name: "not a time", schedule: "tomorrow", wantArg: argSchedule, wantProblem: "must be an RFC 3339 time with an offset"},
		{name: "empty", schedule: "", wantArg: argSchedule, wantProblem: "is empty"},
		{name: "empty with zone", schedule: "", timeZone: "Europe/Berlin", wantArg: argSchedule, wantProblem: "is empty"},
		{name: "64 bytes is read", schedule: "2026-11-21T09:00:00Z" + strings.Repeat(" ", 44), wantArg: argSchedule, wantProblem: "must be an RFC 3339 time"},
		{name: "65 bytes", schedule: "2026-11-21T09:00:00Z" + strings.Repeat(" ", 45), wantArg: argSchedule, wantProblem: "is 65 bytes long, more than the 64 allowed"},
		{name: "lowercase t", schedule: "2026-11-21t09:00:00Z", wantArg: argSchedule, wantProblem: "T and Z must be uppercase"},
		{name: "lowercase z", schedule: "2026-11-21T09:00:00z", wantArg: argSchedule, wantProblem: "T and Z must be uppercase"},
		{name: "lowercase t with zone", schedule: "2026-11-21t09:00", timeZone: "Europe/Berlin", wantArg: argSchedule, wantProblem: "T and Z must be uppercase"},
		{name: "space instead of T", schedule: "2026-11-21 09:00:00Z", wantArg: argSchedule, wantProblem: "separated by T"},
		{name: "date only", schedule: "2026-11-21", wantArg: argSchedule, wantProblem: "must be an RFC 3339 time"},
		{name: "one-digit hour", schedule: "2026-11-21T9:00:00Z", wantArg: argSchedule, wantProblem: "must be an RFC 3339 time"},
		{name: "comma before fraction", schedule: "2026-11-21T09:00:00,5Z", wantArg: argSchedule, wantProblem: "must be an RFC 3339 time"},
		{name: "empty fraction", schedule: "2026-11-21T09:00:00.Z", wantArg: argSchedule, wantProblem: "must be an RFC 3339 time"},
		{name: "ten fraction digits", schedule: "2026-11-21T09:00:00.1234567891Z", wantArg: argSchedule, wantProblem: "must be an RFC 3339 time"},
		{name: "fraction without seconds", schedule: "2026-11-21T09:00.5", timeZone: "Europe/Berlin", wantArg: argSchedule, wantProblem: "must be a wall-clock time without offset"},
		{name: "offset without colon", schedule: "2026-11-21T09:00:00+0100", wantArg: argSchedule, wantProblem: "must be an RFC 3339 time"},
		{name: "trailing text", schedule: "2026-11-21T09:00:00Z ", wantArg: argSchedule, wantProblem: "must be an RFC 3339 time"},
		{name: "non-ASCII digits", schedule: "２０２６-11-21T09:00:00Z", wantArg: argSchedule, wantProblem: "must be an RFC 3339 time"},

		{name: "no offset without zone", schedule: "2026-11-21T09:00:00", wantArg: argSchedule, wantProblem: "a time without offset requires spec.timeZone"},
		{name: "no offset and no seconds without zone", schedule: "2026-11-21T09:00", wantArg: argSchedule, wantProblem: "a time without offset requires spec.timeZone"},
		{name: "no seconds with offset", schedule: "2026-11-21T09:00Z", wantArg: argSchedule, wantProblem: "RFC 3339 requires seconds"},
		{name: "offset with zone", schedule: "2026-11-21T09:00:00+01:00", timeZone: "Europe/Berlin", wantArg: argSchedule, wantProblem: "remove the offset or the timeZone"},
		{name: "Z with zone", schedule: "2026-11-21T09:00:00Z", timeZone: "UTC", wantArg: argSchedule, wantProblem: "remove the offset or the timeZone"},

		{name: "month 13", schedule: "2026-13-21T09:00:00Z", wantArg: argSchedule, wantProblem: "the month must be between 01 and 12"},
		{name: "month 0", schedule: "2026-00-21T09:00:00Z", wantArg: argSchedule, wantProblem: "the month must be between 01 and 12"},
		{name: "day 0", schedule: "2026-11-00T09:00:00Z", wantArg: argSchedule, wantProblem: "November 2026 has no day 00"},
		{name: "February 29 in a common year", schedule: "2026-02-29T09:00", timeZone: "Europe/Berlin", wantArg: argSchedule, wantProblem: "February 2026 has no day 29"},
		{name: "hour 24", schedule: "2026-11-21T24:00:00Z", wantArg: argSchedule, wantProblem: "the hour must be between 00 and 23"},
		{name: "minute 60", schedule: "2026-11-21T09:60:00Z", wantArg: argSchedule, wantProblem: "the minute must be between 00 and 59"},
		{name: "leap second", schedule: "2016-12-31T23:59:60Z", wantArg: argSchedule, wantProblem: "the second must be between 00 and 59"},
		{name: "offset hour 24", schedule: "2026-11-21T09:00:00+24:00", wantArg: argSchedule, wantProblem: "the offset must be between -23:59 and +23:59"},
		{name: "offset minute 60", schedule: "2026-11-21T09:00:00-01:60", wantArg: argSchedule, wantProblem: "the offset must be between -23:59 and +23:59"},

		{name: "year 0000", schedule: "0000-11-21T09:00:00Z", wantArg: argSchedule, wantProblem: "the year must have four digits, from 0001 to 9999"},
		{name: "year 10000", schedule: "10000-11-21T09:00:00Z", wantArg: argSchedule, wantProblem: "the year must have four digits, from 0001 to 9999"},
		{name: "negative year", schedule: "-0001-11-21T09:00:00Z", wantArg: argSchedule, wantProblem: "the year must have four digits, from 0001 to 9999"},
		{name: "signed year", schedule: "+2026-11-21T09:00", timeZone: "Europe/Berlin", wantArg: argSchedule, wantProblem: "the year must have four digits, from 0001 to 9999"},
		{name: "before year 0001 in UTC", schedule: "0001-01-01T00:00:00+01:00", wantArg: argSchedule, wantProblem: "the time falls outside the years 0001 to 9999 in UTC"},
		{name: "after year 9999 in UTC", schedule: "9999-12-31T23:00:00-01:00", wantArg: argSchedule, wantProblem: "the time falls outside the years 0001 to 9999 in UTC"},
		{name: "zone before year 0001 in UTC", schedule: "0001-01-01T00:00", timeZone: "Asia/Tokyo", wantArg: argSchedule, wantProblem: "the time falls outside the years 0001 to 9999 in UTC"},
		{name: "zone after year 9999 in UTC", schedule: "9999-12-31T23:30", timeZone: "America/New_York", wantArg: argSchedule, wantProblem: "the time falls outside the years 0001 to 9999 in UTC"},

		{name: "unknown zone", schedule: "2026-11-21T09:00", timeZone: "Mars/Olympus_Mons", wantArg: argTimeZone, wantProblem: "unknown time zone"},
		{name: "Local", schedule: "2026-11-21T09:00", timeZone: "Local", wantArg: argTimeZone, wantProblem: `"Local" is the time zone of the controller's machine`},
		{name: "Local in lowercase", schedule: "2026-11-21T09:00", timeZone: "local", wantArg: argTimeZone, wantProblem: `"Local" is the time zone of the controller's machine`},
		{name: "zone with a path", schedule: "2026-11-21T09:00", timeZone: "../../etc/localtime", wantArg: argTimeZone, wantProblem: "unknown time zone"},
		{name: "absolute zone path", schedule: "2026-11-21T09:00", timeZone: "/usr/share/zoneinfo/UTC", wantArg: argTimeZone, wantProblem: "unknown time zone"},
		{name: "zone with spaces", schedule: "2026-11-21T09:00", timeZone: " Europe/Berlin", wantArg: argTimeZone, wantProblem: "unknown time zone"},
		{name: "abbreviation", schedule: "2026-11-21T09:00", timeZone: "CEST", wantArg: argTimeZone, wantProblem: "unknown time zone"},
		{name: "zone checked before schedule", schedule: "tomorrow", timeZone: "Mars/Olympus_Mons", wantArg: argTimeZone, wantProblem: "unknown time zone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := scheduler.ParseSchedule(tt.schedule, tt.timeZone)
			g.Expect(err).To(HaveOccurred())
			arg, value, detail := argOf(err)
			g.Expect(arg).To(Equal(tt.wantArg), "the error is a *ScheduleError or *TimeZoneError about this argument: %v", err)
			wantValue := tt.schedule
			if tt.wantArg == argTimeZone {
				wantValue = tt.timeZone
			}
			g.Expect(value).To(Equal(wantValue))
			g.Expect(detail).To(ContainSubstring(tt.wantProblem))
			g.Expect(detail).To(ContainSubstring("such as"), "lists the accepted forms")
		})
	}
}

func TestScheduleErrorError(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{
			name: "short value",
			err:  &scheduler.ScheduleError{Value: "tomorrow", Detail: "must be a time"},
			want: `invalid schedule "tomorrow": must be a time`,
		},
		{
			name: "long value is cut",
			err:  &scheduler.ScheduleError{Value: strings.Repeat("a", 100), Detail: "is too long"},
			want: `invalid schedule "` + strings.Repeat("a", 64) + `...": is too long`,
		},
		{
			name: "long value is cut between characters",
			err:  &scheduler.TimeZoneError{Value: strings.Repeat("a", 63) + "ä", Detail: "unknown time zone"},
			want: `invalid time zone "` + strings.Repeat("a", 63) + `...": unknown time zone`,
		},
		{
			name: "64 bytes are quoted whole",
			err:  &scheduler.ScheduleError{Value: strings.Repeat("a", 64), Detail: "must be a time"},
			want: `invalid schedule "` + strings.Repeat("a", 64) + `": must be a time`,
		},
		{
			// Not UTF-8 (only ParseSchedule's own callers can pass such a
			// value; the API server cannot): no character starts in the
			// first 65 bytes, so nothing of it is quoted.
			name: "long value without a character boundary",
			err:  &scheduler.ScheduleError{Value: strings.Repeat("\x80", 100), Detail: "must be a time"},
			want: `invalid schedule "...": must be a time`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tt.err.Error()).To(Equal(tt.want))
		})
	}
}

// TestParseScheduleMessages pins complete messages (the field they are
// about is named by the caller: lifecycle's TestScheduledTimeMessages).
func TestParseScheduleMessages(t *testing.T) {
	tests := []struct {
		name     string
		schedule string
		timeZone string
		want     string
	}{
		{
			name:     "not a time",
			schedule: "tomorrow",
			want:     `invalid schedule "tomorrow": must be an RFC 3339 time with an offset, such as 2026-11-21T09:00:00Z or 2026-11-21T09:00:00+01:00, or a wall-clock time such as 2026-11-21T09:00:00 together with spec.timeZone`,
		},
		{
			name:     "no offset without zone",
			schedule: "2026-11-21T09:00:00",
			want:     `invalid schedule "2026-11-21T09:00:00": a time without offset requires spec.timeZone; must be an RFC 3339 time with an offset, such as 2026-11-21T09:00:00Z or 2026-11-21T09:00:00+01:00, or a wall-clock time such as 2026-11-21T09:00:00 together with spec.timeZone`,
		},
		{
			name:     "offset with zone",
			schedule: "2026-11-21T09:00:00+01:00",
			timeZone: "Europe/Berlin",
			want:     `invalid schedule "2026-11-21T09:00:00+01:00": a time with an offset is ambiguous together with spec.timeZone: remove the offset or the timeZone; must be a wall-clock time without offset, such as 2026-11-21T09:00:00 or 2026-11-21T09:00, because spec.timeZone is set`,
		},
		{
			// At the limit: read, quoted whole, and not called too long.
			name:     "64 bytes",
			schedule: "2026-11-21T09:00:00Z" + strings.Repeat(" ", 44),
			want:     `invalid schedule "2026-11-21T09:00:00Z` + strings.Repeat(" ", 44) + `": must be an RFC 3339 time with an offset, such as 2026-11-21T09:00:00Z or 2026-11-21T09:00:00+01:00, or a wall-clock time such as 2026-11-21T09:00:00 together with spec.timeZone`,
		},
		{
			name:     "unknown zone",
			schedule: "2026-11-21T09:00",
			timeZone: "Europe/Berln",
			want:     `invalid time zone "Europe/Berln": unknown time zone; must be a time zone name from the IANA tz database, such as Europe/Berlin, America/New_York or UTC`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := scheduler.ParseSchedule(tt.schedule, tt.timeZone)
			g.Expect(err).To(MatchError(tt.want))
		})
	}
}
