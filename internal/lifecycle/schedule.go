package lifecycle

import (
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/scheduler"
)

// ScheduledTime is the instant spec names, or the field error on
// spec.schedule or spec.timeZone in the scheduler's words, which the webhook,
// Decide (InvalidSpec) and cnatctl at share.
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
