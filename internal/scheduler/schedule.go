package scheduler

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Paths of the At fields that a ScheduleError can name, in the notation that
// Kubernetes uses for field errors.
const (
	// FieldSchedule is the path of the field holding the schedule.
	FieldSchedule = "spec.schedule"
	// FieldTimeZone is the path of the field holding the time zone name.
	FieldTimeZone = "spec.timeZone"
)

// MaxScheduleLength is the length in bytes of the longest schedule that
// ParseSchedule reads. The longest accepted schedule,
// 2026-11-21T09:00:00.123456789+01:00, has 35 bytes; the bound keeps parsing
// and error messages small even if a value got past API validation.
const MaxScheduleLength = 64

// maxTimeZoneLength bounds spec.timeZone before it is looked up. The longest
// name in the tz database, America/Argentina/ComodRivadavia, has 32 bytes.
const maxTimeZoneLength = 64

// ScheduleError reports a schedule or time zone that cannot be turned into an
// instant. Its fields match the arguments of the Kubernetes field.Invalid
// constructor, so that callers can surface it as a validation error, a
// status condition or an event without parsing the message.
type ScheduleError struct {
	// Field is the path of the rejected field: FieldSchedule or FieldTimeZone.
	Field string
	// Value is the rejected value, as given.
	Value string
	// Detail says what is wrong with Value and which forms are accepted.
	Detail string
}

// Error formats e like a Kubernetes field error, quoting at most
// MaxScheduleLength bytes of the value.
func (e *ScheduleError) Error() string {
	value := e.Value
	if len(value) > MaxScheduleLength {
		cut := MaxScheduleLength
		for cut > 0 && !utf8.RuneStart(value[cut]) {
			cut--
		}
		value = value[:cut] + "..."
	}
	return fmt.Sprintf("%s: Invalid value: %q: %s", e.Field, value, e.Detail)
}

// The accepted forms, as every ScheduleError spells them out.
const (
	instantForms   = "must be an RFC 3339 time with an offset, such as 2026-11-21T09:00:00Z or 2026-11-21T09:00:00+01:00, or a wall-clock time such as 2026-11-21T09:00:00 together with " + FieldTimeZone
	wallClockForms = "must be a wall-clock time without offset, such as 2026-11-21T09:00:00 or 2026-11-21T09:00, because " + FieldTimeZone + " is set"
	timeZoneForms  = "must be a time zone name from the IANA tz database, such as Europe/Berlin, America/New_York or UTC"
)

// invalidSchedule builds every error about spec.schedule: the problem, when
// one more specific than "not an accepted form" is known, followed by the
// forms accepted with or without a time zone.
func invalidSchedule(schedule, timeZone, problem string) *ScheduleError {
	forms := instantForms
	if timeZone != "" {
		forms = wallClockForms
	}
	return &ScheduleError{Field: FieldSchedule, Value: schedule, Detail: withForms(problem, forms)}
}

// invalidTimeZone builds every error about spec.timeZone.
func invalidTimeZone(timeZone, problem string) *ScheduleError {
	return &ScheduleError{Field: FieldTimeZone, Value: timeZone, Detail: withForms(problem, timeZoneForms)}
}

func withForms(problem, forms string) string {
	if problem == "" {
		return forms
	}
	return problem + "; " + forms
}

// ParseSchedule returns the instant a schedule denotes.
//
// Without a time zone, schedule must be an RFC 3339 time with an explicit
// offset, such as 2026-11-21T09:00:00Z or 2026-11-21T09:00:00.5+01:00; the
// result is in UTC for a zero offset and in a fixed zone with the written
// offset otherwise.
//
// With a time zone, timeZone must name a zone of the IANA tz database other
// than "Local", and schedule must be a wall-clock time without offset, such
// as 2026-11-21T09:00:00 or 2026-11-21T09:00, which is read in that zone; the
// result is in that zone.
//
// In both forms T and Z are uppercase, and seconds may carry a fraction of
// one to nine digits.
//
// When a daylight saving or other offset change makes a wall-clock time
// ambiguous:
//
//   - In a gap, where the time does not exist (02:30 on the day Europe/Berlin
//     springs forward from 02:00 to 03:00), the time is read with the offset
//     in force before the gap, which moves it forward by the length of the
//     gap (02:30 becomes 03:30+02:00).
//   - In an overlap, where the time happens twice (02:30 on the day
//     Europe/Berlin falls back from 03:00 to 02:00), the earlier instant is
//     chosen, read with the offset in force before the change (02:30+02:00).
//
// These are the rules of java.time's ZonedDateTime.of.
//
// Both the written year and the year of the instant in UTC must lie in 0001
// through 9999, the years RFC 3339 can express. Schedules longer than
// MaxScheduleLength bytes are rejected unread.
//
// Every error is a *ScheduleError naming the field at fault.
func ParseSchedule(schedule, timeZone string) (time.Time, error) {
	if timeZone == "" {
		return parseInstant(schedule)
	}
	loc, err := loadTimeZone(timeZone)
	if err != nil {
		return time.Time{}, err
	}
	return parseWallClock(schedule, timeZone, loc)
}

func parseInstant(schedule string) (time.Time, error) {
	w, problem, ok := splitSchedule(schedule)
	switch {
	case !ok:
		return time.Time{}, invalidSchedule(schedule, "", problem)
	case !w.hasOffset:
		return time.Time{}, invalidSchedule(schedule, "", "a time without offset requires "+FieldTimeZone)
	case !w.hasSeconds:
		return time.Time{}, invalidSchedule(schedule, "", "RFC 3339 requires seconds")
	}
	t := w.wall.Add(-time.Duration(w.offset) * time.Second)
	if w.offset == 0 {
		t = t.UTC()
	} else {
		t = t.In(time.FixedZone("", w.offset))
	}
	if !inRFC3339Range(t) {
		return time.Time{}, invalidSchedule(schedule, "", outOfRangeInUTC)
	}
	return t, nil
}

func parseWallClock(schedule, timeZone string, loc *time.Location) (time.Time, error) {
	w, problem, ok := splitSchedule(schedule)
	switch {
	case !ok:
		return time.Time{}, invalidSchedule(schedule, timeZone, problem)
	case w.hasOffset:
		return time.Time{}, invalidSchedule(schedule, timeZone, "a time with an offset is ambiguous together with "+FieldTimeZone+": remove the offset or the timeZone")
	}
	t := resolveWallClock(w.wall, loc)
	if !inRFC3339Range(t) {
		return time.Time{}, invalidSchedule(schedule, timeZone, outOfRangeInUTC)
	}
	return t, nil
}

// loadTimeZone looks up an IANA zone. "Local" is rejected because it is the
// zone of whichever machine runs the controller, which users neither know nor
// control; names that cannot be tz database names are rejected before they
// reach the file system.
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

// isTimeZoneName reports whether name has the shape of a tz database name:
// components of 1 to 14 ASCII letters, digits, '.', '_', '-' or '+',
// separated by '/', none of them "." or ".." and none starting with '-'.
// Kubernetes validates CronJob time zones the same way.
func isTimeZoneName(name string) bool {
	if name == "" || len(name) > maxTimeZoneLength {
		return false
	}
	for part := range strings.SplitSeq(name, "/") {
		if len(part) == 0 || len(part) > 14 || part == "." || part == ".." || part[0] == '-' {
			return false
		}
		for i := 0; i < len(part); i++ {
			c := part[i]
			letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
			if !letter && !isDigit(c) && !strings.ContainsRune("._-+", rune(c)) {
				return false
			}
		}
	}
	return true
}

// resolveWallClock returns the instant at which clocks in loc show the date
// and time of day that wall has in UTC, following the gap and overlap rules
// of ParseSchedule.
//
// An instant showing wall is wall minus the offset in force at that instant.
// Every offset in the tz database is smaller than a day and offset changes
// are days apart, so the offsets in force one day before and one day after
// wall (read as UTC) are the only ones that can produce it: in a gap neither
// does, in an overlap both do. The JavaScript Temporal proposal resolves wall
// times the same way. time.Date is not used because its result in gaps and
// overlaps is unspecified.
func resolveWallClock(wall time.Time, loc *time.Location) time.Time {
	before := offsetAt(wall.Add(-24*time.Hour), loc)
	after := offsetAt(wall.Add(24*time.Hour), loc)

	// When the offset decreases (an overlap), the instant read with the
	// offset before the change is the earlier one, so it is tried first.
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

const outOfRangeInUTC = "the time falls outside the years 0001 to 9999 in UTC"

func inRFC3339Range(t time.Time) bool {
	year := t.UTC().Year()
	return 1 <= year && year <= 9999
}

// writtenTime is a schedule split into what the user wrote.
type writtenTime struct {
	wall       time.Time // the date and time of day as written, in UTC as a stand-in
	hasSeconds bool
	hasOffset  bool
	offset     int // seconds east of UTC, if hasOffset
}

// splitSchedule reads the grammar that both forms of schedule share,
//
//	YYYY-MM-DDThh:mm[:ss[.fraction]][Z|+hh:mm|-hh:mm]
//
// with a fraction of one to nine digits and every field in range. When s
// does not follow it, ok is false and problem says why, or is empty if
// nothing more specific than "not an accepted form" can be said.
func splitSchedule(s string) (w writtenTime, problem string, ok bool) {
	switch {
	case s == "":
		return w, "is empty", false
	case len(s) > MaxScheduleLength:
		return w, fmt.Sprintf("is %d bytes long, more than the %d allowed", len(s), MaxScheduleLength), false
	case hasOutOfRangeYear(s):
		return w, yearRange, false
	}

	sc := scanner{s: s, ok: true}
	year := sc.digits(4)
	sc.expect('-')
	month := sc.digits(2)
	sc.expect('-')
	day := sc.digits(2)
	sc.expect('T')
	hour := sc.digits(2)
	sc.expect(':')
	minute := sc.digits(2)
	second, nanosecond := 0, 0
	if sc.skip(':') {
		w.hasSeconds = true
		second = sc.digits(2)
		if sc.skip('.') {
			nanosecond = sc.fraction()
		}
	}
	offsetHours, offsetMinutes := 0, 0
	if sc.skip('Z') {
		w.hasOffset = true
	} else if sign := sc.sign(); sign != 0 {
		w.hasOffset = true
		offsetHours = sc.digits(2)
		sc.expect(':')
		offsetMinutes = sc.digits(2)
		w.offset = sign * (offsetHours*60 + offsetMinutes) * 60
	}
	if !sc.ok || sc.pos != len(s) {
		return writtenTime{}, syntaxHint(s), false
	}

	switch {
	case year == 0:
		return writtenTime{}, yearRange, false
	case month < 1 || month > 12:
		return writtenTime{}, "the month must be between 01 and 12", false
	case day < 1 || day > daysIn(time.Month(month), year):
		return writtenTime{}, fmt.Sprintf("%s %04d has no day %02d", time.Month(month), year, day), false
	case hour > 23:
		return writtenTime{}, "the hour must be between 00 and 23", false
	case minute > 59:
		return writtenTime{}, "the minute must be between 00 and 59", false
	case second > 59:
		return writtenTime{}, "the second must be between 00 and 59", false
	case offsetHours > 23 || offsetMinutes > 59:
		return writtenTime{}, "the offset must be between -23:59 and +23:59", false
	}
	w.wall = time.Date(year, time.Month(month), day, hour, minute, second, nanosecond, time.UTC)
	return w, "", true
}

const yearRange = "the year must have four digits, from 0001 to 9999"

// hasOutOfRangeYear recognizes the ISO 8601 ways of writing years outside
// 0000 through 9999, a signed or a longer-than-four-digit year, so that they
// get a clear error rather than a syntax one.
func hasOutOfRangeYear(s string) bool {
	if (s[0] == '+' || s[0] == '-') && len(s) > 1 && isDigit(s[1]) {
		return true
	}
	n := 0
	for n < len(s) && isDigit(s[n]) {
		n++
	}
	return n > 4 && n < len(s) && s[n] == '-'
}

// syntaxHint names the mistakes in a malformed schedule that are common
// enough to deserve more than the list of accepted forms.
func syntaxHint(s string) string {
	switch {
	case len(s) > 10 && s[10] == 't', strings.HasSuffix(s, "z"):
		return "T and Z must be uppercase"
	case len(s) > 10 && s[10] == ' ':
		return "the date and the time must be separated by T"
	}
	return ""
}

// scanner reads a schedule from left to right. After the first mismatch ok
// is false and every further read fails.
type scanner struct {
	s   string
	pos int
	ok  bool
}

// digits reads exactly n decimal digits.
func (sc *scanner) digits(n int) int {
	v := 0
	for range n {
		if !sc.ok || sc.pos >= len(sc.s) || !isDigit(sc.s[sc.pos]) {
			sc.ok = false
			return 0
		}
		v = v*10 + int(sc.s[sc.pos]-'0')
		sc.pos++
	}
	return v
}

// fraction reads one to nine digits after a decimal point and returns them
// as nanoseconds.
func (sc *scanner) fraction() int {
	v, n := 0, 0
	for sc.ok && sc.pos < len(sc.s) && isDigit(sc.s[sc.pos]) && n < 9 {
		v = v*10 + int(sc.s[sc.pos]-'0')
		sc.pos++
		n++
	}
	if n == 0 {
		sc.ok = false
	}
	for ; n < 9; n++ {
		v *= 10
	}
	return v
}

// skip consumes c if it comes next.
func (sc *scanner) skip(c byte) bool {
	if sc.ok && sc.pos < len(sc.s) && sc.s[sc.pos] == c {
		sc.pos++
		return true
	}
	return false
}

func (sc *scanner) expect(c byte) {
	if !sc.skip(c) {
		sc.ok = false
	}
}

// sign consumes a '+' or '-' and returns 1 or -1, or returns 0 if neither
// comes next.
func (sc *scanner) sign() int {
	switch {
	case sc.skip('+'):
		return 1
	case sc.skip('-'):
		return -1
	}
	return 0
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func daysIn(m time.Month, year int) int {
	return time.Date(year, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
