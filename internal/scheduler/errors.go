package scheduler

import (
	"fmt"
	"unicode/utf8"
)

// ScheduleError reports a schedule that is not a time ParseSchedule reads,
// or is not one in the form the time zone (or its absence) calls for.
type ScheduleError struct {
	// Value is the rejected schedule, as given.
	Value string
	// Detail says what is wrong with Value and which forms are accepted.
	Detail string
}

func (e *ScheduleError) Error() string { return invalidValue("schedule", e.Value, e.Detail) }

// TimeZoneError reports a time zone that is not a zone of the IANA tz
// database, or is "Local".
type TimeZoneError struct {
	// Value is the rejected time zone name, as given.
	Value string
	// Detail says what is wrong with Value and which names are accepted.
	Detail string
}

func (e *TimeZoneError) Error() string { return invalidValue("time zone", e.Value, e.Detail) }

// invalidValue words an error about what, quoting at most MaxScheduleLength
// bytes of the value.
func invalidValue(what, value, detail string) string {
	if len(value) > MaxScheduleLength {
		cut := MaxScheduleLength
		for cut > 0 && !utf8.RuneStart(value[cut]) {
			cut--
		}
		value = value[:cut] + "..."
	}
	return fmt.Sprintf("invalid %s %q: %s", what, value, detail)
}

// The accepted forms, as every error spells them out.
const (
	instantForms   = "must be an RFC 3339 time with an offset, such as 2026-11-21T09:00:00Z or 2026-11-21T09:00:00+01:00, or a wall-clock time such as 2026-11-21T09:00:00 together with spec.timeZone"
	wallClockForms = "must be a wall-clock time without offset, such as 2026-11-21T09:00:00 or 2026-11-21T09:00, because spec.timeZone is set"
	timeZoneForms  = "must be a time zone name from the IANA tz database, such as Europe/Berlin, America/New_York or UTC"
)

// invalidSchedule builds every ScheduleError: the problem, if known, then the accepted forms.
func invalidSchedule(schedule string, zoned bool, problem string) *ScheduleError {
	forms := instantForms
	if zoned {
		forms = wallClockForms
	}
	return &ScheduleError{Value: schedule, Detail: withForms(problem, forms)}
}

// invalidTimeZone builds every TimeZoneError.
func invalidTimeZone(timeZone, problem string) *TimeZoneError {
	return &TimeZoneError{Value: timeZone, Detail: withForms(problem, timeZoneForms)}
}

func withForms(problem, forms string) string {
	if problem == "" {
		return forms
	}
	return problem + "; " + forms
}
