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

// Action is what the controller should do with an At now.
type Action int

const (
	// Wait means the At is not due yet: look again after Decision.After.
	Wait Action = iota
	// Fire means the At is due and within its starting deadline: start the
	// run now.
	Fire
	// Miss means the At is due but its starting deadline has passed: record
	// it as missed and never run it.
	Miss
	// Suspended means the At is suspended: do nothing and set no timer,
	// since resuming it is an update that brings it back.
	Suspended
)

// Decision is the outcome of Plan.Decide.
type Decision struct {
	// Action is what to do now.
	Action Action
	// After is, for Wait, the time left until ScheduledTime, exactly: callers
	// that requeue add their own margin for clock skew and timer jitter.
	// It saturates at the largest Duration, about 292 years.
	After time.Duration
	// Lateness is, for Fire and Miss, how long ago ScheduledTime was, for
	// the run's events and status. It saturates at the largest Duration,
	// about 292 years.
	Lateness time.Duration
}

// Decide says what to do at now with an At that has not fired yet.
//
// A suspended At is Suspended whatever the time; a starting deadline that
// passes while it is suspended is judged when it is resumed, by the rules
// that follow. Before ScheduledTime the At must Wait. From ScheduledTime on
// it must Fire, unless it has a starting deadline and now is later than
// ScheduledTime plus the deadline, in which case it is a Miss.
//
// The deadline is counted in whole seconds, like the field it comes from:
// a run is missed once it is more than StartingDeadlineSeconds full seconds
// late. So a run 5.9s late still starts with a deadline of 5, and a deadline
// of 0 means "within the second it was due", which a controller that wakes
// on time can keep (a deadline counted in nanoseconds never could).
func (p Plan) Decide(now time.Time) Decision {
	if p.Suspend {
		return Decision{Action: Suspended}
	}
	if now.Before(p.ScheduledTime) {
		return Decision{Action: Wait, After: p.ScheduledTime.Sub(now)}
	}
	lateness := now.Sub(p.ScheduledTime)
	if p.StartingDeadlineSeconds != nil {
		// Whole seconds late, counted from Unix seconds rather than from a
		// Duration: nothing built from the user's number can overflow, and
		// lateness beyond a Duration's 292 years is still exact.
		lateSeconds := now.Unix() - p.ScheduledTime.Unix()
		if now.Nanosecond() < p.ScheduledTime.Nanosecond() {
			lateSeconds--
		}
		if lateSeconds > max(*p.StartingDeadlineSeconds, 0) {
			return Decision{Action: Miss, Lateness: lateness}
		}
	}
	return Decision{Action: Fire, Lateness: lateness}
}
