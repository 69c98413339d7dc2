// Package scheduler holds the time rules of cnat: when an At is due, whether
// it may still run, and how long to wait between attempts.
//
// It is pure time logic. It has no Kubernetes client and never reads the
// clock: callers pass the current time, which keeps every rule testable at
// its exact boundaries. The only I/O is time.LoadLocation reading the tz
// database; binaries that use this package should import time/tzdata so that
// time zones resolve the same way in every container image.
//
// # Schedules
//
// An At says when it runs in a schedule and, optionally, a time zone.
// ParseSchedule accepts two forms:
//
//   - Without a time zone, an RFC 3339 time with an explicit offset:
//     2026-11-21T09:00:00Z, 2026-11-21T09:00:00+01:00 or, with fractional
//     seconds, 2026-11-21T09:00:00.5Z. T and Z must be uppercase. A time
//     without offset is rejected, because the controller would otherwise
//     have to guess a zone.
//   - With a time zone (an IANA zone name such as Europe/Berlin), a
//     wall-clock time without offset: 2026-11-21T09:00:00 or 2026-11-21T09:00
//     (seconds, and fractional seconds, are optional). The time is read as
//     clocks in that zone show it, so "09:00 in Berlin" stays 09:00 across
//     daylight saving changes. A time with an offset is rejected as
//     ambiguous, and so is the zone "Local", which is the zone of the
//     controller's machine rather than anything the user chose.
//
// Years must lie in 0001 through 9999, both as written and in UTC, as in
// RFC 3339. Schedules longer than MaxScheduleLength bytes are rejected
// before they are parsed.
//
// # Daylight saving time
//
// Where the offset of a zone changes, a wall-clock time may not exist or may
// happen twice. ParseSchedule resolves it like java.time's ZonedDateTime.of:
//
//   - In a gap, when clocks jump forward, the time is read with the offset in
//     force before the jump, which moves it forward by the length of the gap.
//     In Europe/Berlin on 2026-03-29 clocks jump from 02:00 to 03:00, so
//     02:30 becomes 03:30+02:00 (01:30Z).
//   - In an overlap, when clocks are set back, the earlier of the two
//     instants is chosen, which is the time read with the offset in force
//     before the change. In Europe/Berlin on 2026-10-25 clocks go back from
//     03:00 to 02:00, so 02:30 is 02:30+02:00 (00:30Z), not 02:30+01:00.
//
// The same rules apply to any offset change in the tz database, such as
// Samoa skipping 2011-12-30 entirely when it moved across the date line.
//
// # Timing
//
// Plan.Timing says where an At that has not fired yet stands in time: Early
// before the scheduled time, Due once it has come, or Missed if a starting
// deadline has passed: more whole seconds late than the deadline allows, so
// a deadline of 0 means "within the second it was due". A suspended At is
// Suspended whatever the time, and its deadline is judged when it is
// resumed. What to do about it is decided by the caller (package lifecycle).
//
// # Retries
//
// RetryDelay spaces out the attempts of a failing run the way the Kubernetes
// documentation describes for the failed pods of a Job: 10s, 20s, 40s, ...
// up to six minutes.
//
// # Errors
//
// A schedule ParseSchedule cannot read is a *ScheduleError, a time zone it
// cannot use a *TimeZoneError. Both hold the rejected value and a detail
// that says what is wrong and which forms are accepted, which is what a
// Kubernetes field error needs. The package does not know which field of
// an API object a value came from: its callers name it
// (lifecycle.ScheduledTime, for the webhook, the controller and cnatctl).
//
// # For maintainers
//
// time.Parse reads the schedule and checks the calendar. It accepts more
// than the documented grammar: a one-digit hour, a comma before the
// fraction, more than nine fraction digits, year 0000 and offsets of 24
// hours or 60 minutes; a pattern and a few checks in front of it refuse
// those. FuzzParseSchedule checks that exactly the documented grammar is
// accepted, reading it independently by formatting times back.
//
// Do not use time.Date or time.ParseInLocation to read wall-clock times in a
// zone: what they return in gaps and overlaps is unspecified, and for some
// of them it differs from the rules above. resolveWallClock computes the
// candidate instants explicitly instead, relying on two properties of the tz
// database: every offset is smaller than a day, and offset changes are more
// than two days apart. FuzzParseSchedule checks it against a brute-force
// search that relies on neither. Keep every error built by invalidSchedule
// or invalidTimeZone, so that each one lists the accepted forms.
package scheduler
