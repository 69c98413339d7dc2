package scheduler

import (
	"time"
)

// Plan is what an At asks for, reduced to time.
type Plan struct {
	// ScheduledTime is the instant the run is due, as returned by
	// ParseSchedule.
	ScheduledTime time.Time
	// StartingDeadlineSeconds is how late after ScheduledTime a run may
	// still start, in whole seconds; nil means no deadline, negative zero.
	StartingDeadlineSeconds *int64
	// Suspend holds the run back until it is cleared.
	Suspend bool
}

// Timing is where a Plan that has not run yet stands at an instant: what
// time alone says of it. What to do about it is the caller's to decide.
type Timing int

const (
	// Early: the run is not due yet; it is due at ScheduledTime.
	Early Timing = iota
	// Due: the run is due and within its starting deadline, if any.
	Due
	// Missed: the run is due but its starting deadline has passed; it must
	// never start.
	Missed
	// Suspended: the run is held back whatever the time.
	Suspended
)

// Timing says where p stands at now. The deadline counts whole seconds, like
// its field: 0 means "within the second it was due", which a controller that
// wakes on time can keep (a deadline in nanoseconds never could).
func (p Plan) Timing(now time.Time) Timing {
	switch {
	case p.Suspend:
		return Suspended
	case now.Before(p.ScheduledTime):
		return Early
	case p.StartingDeadlineSeconds == nil:
		return Due
	}
	// From Unix seconds, not a Duration: no user number overflows.
	lateSeconds := now.Unix() - p.ScheduledTime.Unix()
	if now.Nanosecond() < p.ScheduledTime.Nanosecond() {
		lateSeconds--
	}
	if lateSeconds > max(*p.StartingDeadlineSeconds, 0) {
		return Missed
	}
	return Due
}
