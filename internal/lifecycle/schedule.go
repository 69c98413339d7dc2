package lifecycle

import (
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/scheduler"
)

// ScheduledTime is the instant spec names: its schedule, read in its time
// zone if it has one. When it names none, the error is about spec.schedule
// or spec.timeZone, worded as the API server words an invalid field, with
// the scheduler's detail: the validating webhook refuses the At with it,
// Decide reports it (InvalidSpec) and cnatctl at refuses the time it was
// given with it, so all three say the same. The scheduler knows times, not
// the At's fields: this is where they are named.
func ScheduledTime(spec *cnatv1beta1.AtSpec) (time.Time, *field.Error) {
	t, err := scheduler.ParseSchedule(spec.Schedule, ptr.Deref(spec.TimeZone, ""))
	if err == nil {
		return t, nil
	}
	path := field.NewPath("spec")
	var ze *scheduler.TimeZoneError
	if errors.As(err, &ze) {
		return t, field.Invalid(path.Child("timeZone"), ze.Value, ze.Detail)
	}
	se := &scheduler.ScheduleError{Value: spec.Schedule, Detail: err.Error()} // ParseSchedule returns no other
	errors.As(err, &se)
	return t, field.Invalid(path.Child("schedule"), se.Value, se.Detail)
}
