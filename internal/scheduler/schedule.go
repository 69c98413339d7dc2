package scheduler

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// MaxScheduleLength is the length in bytes of the longest schedule that
// ParseSchedule reads (the longest accepted one has 35): it keeps parsing and
// errors small even if a value got past API validation.
const MaxScheduleLength = 64

// maxTimeZoneLength bounds a zone name before lookup (the tz database's longest has 32 bytes).
const maxTimeZoneLength = 64

// ParseSchedule returns the instant a schedule denotes: an RFC 3339 time with
// an offset when timeZone is empty, a wall-clock time in that IANA zone
// otherwise. A bad zone (checked first) is a *TimeZoneError, a bad schedule a *ScheduleError.
func ParseSchedule(schedule, timeZone string) (time.Time, error) {
	var loc *time.Location
	if timeZone != "" {
		var err error
		if loc, err = loadTimeZone(timeZone); err != nil {
			return time.Time{}, err
		}
	}
	t, problem, ok := parse(schedule, loc)
	if !ok {
		return time.Time{}, invalidSchedule(schedule, loc != nil, problem)
	}
	return t, nil
}

// shape is the grammar both forms share, the CRD's patterns with a fraction of
// at most nine digits: YYYY-MM-DDThh:mm[:ss[.fraction]][Z|+hh:mm|-hh:mm].
// The groups are the seconds, the offset, and its hours and minutes.
var shape = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(?:\.\d{1,9})?)?(Z|[+-](\d{2}):(\d{2}))?$`)

// longYear matches ISO 8601's signed or longer years, for a clear error.
var longYear = regexp.MustCompile(`^(?:[+-]\d|\d{5,}-)`)

// parse reads s in the form loc calls for (an offset when loc is nil, a wall
// clock in loc otherwise); when it is not, problem says why, or is empty if
// nothing more specific than "not an accepted form" can be said.
func parse(s string, loc *time.Location) (t time.Time, problem string, ok bool) {
	if s == "" {
		return t, "is empty", false
	}
	if len(s) > MaxScheduleLength {
		return t, fmt.Sprintf("is %d bytes long, more than the %d allowed", len(s), MaxScheduleLength), false
	}
	m := shape.FindStringSubmatch(s)
	switch {
	case longYear.MatchString(s), m != nil && s[:4] == "0000":
		return t, yearRange, false
	case m == nil:
		return t, syntaxHint(s), false
	}
	seconds, offset, offsetHours, offsetMinutes := m[1] != "", m[2] != "", m[3], m[4]
	layout := "2006-01-02T15:04"
	if seconds {
		layout += ":05" // time.Parse reads a fraction after seconds unasked
	}
	if offset {
		layout += "Z07:00"
	}
	// The date first, so a bad day is reported before a bad time of day.
	if _, err := time.Parse(time.DateOnly, s[:len(time.DateOnly)]); err != nil {
		return t, rangeProblem(s, err), false
	}
	// In UTC, not time.Local: the machine's zone never shows through.
	t, err := time.ParseInLocation(layout, s, time.UTC)
	switch {
	case err != nil:
		return t, rangeProblem(s, err), false
	case offsetHours > "23" || offsetMinutes > "59":
		return t, offsetRange, false
	case loc == nil && !offset:
		return t, "a time without offset requires spec.timeZone", false
	case loc == nil && !seconds:
		return t, "RFC 3339 requires seconds", false
	case loc != nil && offset:
		return t, "a time with an offset is ambiguous together with spec.timeZone: remove the offset or the timeZone", false
	}
	if loc != nil {
		t = resolveWallClock(t, loc)
	}
	if year := t.UTC().Year(); year < 1 || year > 9999 {
		return t, "the time falls outside the years 0001 to 9999 in UTC", false
	}
	return t, "", true
}

const (
	yearRange   = "the year must have four digits, from 0001 to 9999"
	offsetRange = "the offset must be between -23:59 and +23:59"
)

// rangeProblem words the field time.Parse found out of range in s (a
// time.ParseError names it only in its message).
func rangeProblem(s string, err error) string {
	var pe *time.ParseError
	if !errors.As(err, &pe) {
		return ""
	}
	switch pe.Message {
	case ": month out of range":
		return "the month must be between 01 and 12"
	case ": day out of range":
		month, _ := strconv.Atoi(s[5:7])
		return fmt.Sprintf("%s %s has no day %s", time.Month(month), s[:4], s[8:10])
	case ": hour out of range":
		return "the hour must be between 00 and 23"
	case ": minute out of range":
		return "the minute must be between 00 and 59"
	case ": second out of range":
		return "the second must be between 00 and 59"
	case ": time zone offset hour out of range", ": time zone offset minute out of range":
		return offsetRange
	}
	return ""
}

// syntaxHint names the common mistakes in a malformed schedule.
func syntaxHint(s string) string {
	switch {
	case len(s) > 10 && s[10] == 't', strings.HasSuffix(s, "z"):
		return "T and Z must be uppercase"
	case len(s) > 10 && s[10] == ' ':
		return "the date and the time must be separated by T"
	}
	return ""
}

// loadTimeZone looks up an IANA zone; "Local" and names that cannot be tz
// database names are refused before they reach the file system.
func loadTimeZone(name string) (*time.Location, error) {
	if strings.EqualFold(name, "Local") {
		return nil, invalidTimeZone(name, `"Local" is the time zone of the controller's machine, not of the At`)
	}
	if !isTimeZoneName(name) {
		return nil, invalidTimeZone(name, "unknown time zone")
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, invalidTimeZone(name, "unknown time zone")
	}
	return loc, nil
}

var timeZoneNamePart = regexp.MustCompile(`^[A-Za-z0-9._+][A-Za-z0-9._+-]{0,13}$`)

// isTimeZoneName reports whether name has the shape of a tz database name,
// as Kubernetes checks a CronJob's time zone.
func isTimeZoneName(name string) bool {
	if len(name) > maxTimeZoneLength {
		return false
	}
	for part := range strings.SplitSeq(name, "/") {
		if part == "." || part == ".." || !timeZoneNamePart.MatchString(part) {
			return false
		}
	}
	return true
}

// resolveWallClock returns the instant at which clocks in loc show what wall
// shows in UTC, by the gap and overlap rules of docs/architecture.md: only the
// offsets in force a day before and a day after can produce it.
func resolveWallClock(wall time.Time, loc *time.Location) time.Time {
	before := offsetAt(wall.Add(-24*time.Hour), loc)
	after := offsetAt(wall.Add(24*time.Hour), loc)

	// In an overlap the offset before the change gives the earlier instant.
	for _, offset := range []int{before, after} {
		t := wall.Add(-time.Duration(offset) * time.Second)
		if offsetAt(t, loc) == offset {
			return t.In(loc)
		}
	}
	// A gap: read wall with the offset in force before it.
	return wall.Add(-time.Duration(before) * time.Second).In(loc)
}

func offsetAt(t time.Time, loc *time.Location) int {
	_, offset := t.In(loc).Zone()
	return offset
}
