package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/lifecycle"
	"github.com/programming-kubernetes/cnat/internal/scheduler"
)

// when is an At's schedule as cnatctl writes it into the spec, and the
// instant it denotes.
type when struct {
	// Schedule is spec.schedule.
	Schedule string
	// TimeZone is spec.timeZone, empty for a schedule with an offset.
	TimeZone string
	// Instant is when the At runs.
	Instant time.Time
}

// parseWhen reads the time argument of `cnatctl at`: "+90s" (RFC 3339 in
// UTC, rounded up to whole seconds), an RFC 3339 time with an offset, or a
// wall-clock time with timeZone; the last two are written as given.
func parseWhen(arg, timeZone string, now time.Time) (when, error) {
	if rel, ok := strings.CutPrefix(arg, "+"); ok {
		if timeZone != "" {
			return when{}, errors.New("--time-zone applies to a wall-clock time, not to a duration such as " + arg)
		}
		d, err := time.ParseDuration(rel)
		if err != nil || d <= 0 {
			return when{}, fmt.Errorf("%q is not a positive duration after '+': write it like +90s, +10m or +1h30m", arg)
		}
		t := now.Add(d).UTC()
		if r := t.Truncate(time.Second); !r.Equal(t) {
			t = r.Add(time.Second)
		}
		return when{Schedule: t.Format(time.RFC3339), Instant: t}, nil
	}
	if timeZone != "" {
		t, err := lifecycle.ScheduledTime(&cnatv1beta1.AtSpec{Schedule: arg, TimeZone: &timeZone})
		if err != nil {
			return when{}, err
		}
		return when{Schedule: arg, TimeZone: timeZone, Instant: t}, nil
	}
	t, err := scheduler.ParseSchedule(arg, "")
	if err != nil {
		if _, wallErr := scheduler.ParseSchedule(arg, "UTC"); wallErr == nil {
			full := arg
			if _, clock, _ := strings.Cut(arg, "T"); strings.Count(clock, ":") == 1 {
				full += ":00" // an offset needs seconds
			}
			return when{}, fmt.Errorf("%q has no UTC offset: add one (such as %sZ or %s+01:00), or name its time zone with --time-zone (such as --time-zone Europe/Berlin)", arg, full, full)
		}
		return when{}, fmt.Errorf("%q is not a time cnatctl understands: give +<duration> (+90s, +1h30m), an RFC 3339 time with an offset (2026-11-22T09:00:00Z, 2026-11-22T09:00:00+01:00), or a wall-clock time with --time-zone (2026-11-22T09:00 --time-zone Europe/Berlin)", arg)
	}
	return when{Schedule: arg, Instant: t}, nil
}
