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
// zone if it has one; else the field error on spec.schedule or
// spec.timeZone, in the scheduler's words. The webhook refuses an At with
// it, Decide reports it (InvalidSpec), cnatctl at refuses a time with it:
// the scheduler knows values, not the At's fields, which are named here.
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
