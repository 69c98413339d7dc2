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
	// still start, in whole seconds as the API has it. Nil means no deadline:
	// a run whose time has passed, for example because the controller was
	// down, starts as soon as it is seen. A negative deadline counts as zero;
	// any int64 is handled without overflow.
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
	// Suspended: the run is held back whatever the time, until resuming it
	// (an update of the At) asks again.
	Suspended
)

// Timing says where p stands at now.
//
// A suspended plan is Suspended whatever the time; a starting deadline that
// passes while it is suspended is judged when it is resumed, by the rules
// that follow. Before ScheduledTime it is Early. From ScheduledTime on it is
// Due, unless it has a starting deadline and now is later than
// ScheduledTime plus the deadline: then it is Missed.
//
// The deadline is counted in whole seconds, like the field it comes from:
// a run is missed once it is more than StartingDeadlineSeconds full seconds
// late. So a run 5.9s late still starts with a deadline of 5, and a deadline
// of 0 means "within the second it was due", which a controller that wakes
// on time can keep (a deadline counted in nanoseconds never could).
func (p Plan) Timing(now time.Time) Timing {
	switch {
	case p.Suspend:
		return Suspended
	case now.Before(p.ScheduledTime):
		return Early
	case p.StartingDeadlineSeconds == nil:
		return Due
	}
	// Whole seconds late, counted from Unix seconds rather than from a
	// Duration: nothing built from the user's number can overflow, and
	// lateness beyond a Duration's 292 years is still exact.
	lateSeconds := now.Unix() - p.ScheduledTime.Unix()
	if now.Nanosecond() < p.ScheduledTime.Nanosecond() {
		lateSeconds--
	}
	if lateSeconds > max(*p.StartingDeadlineSeconds, 0) {
		return Missed
	}
	return Due
}
