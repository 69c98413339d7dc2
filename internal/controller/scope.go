package controller

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/scheduler"
)

// scope is one reconcile of one At: the At as read, the clock reading the
// whole reconcile uses, the status being computed, and what to announce
// once that status is written.
type scope struct {
	at     *cnatv1beta1.At
	now    time.Time
	status *cnatv1beta1.AtStatus

	// events are emitted, and observations recorded, only after the status
	// that reports them has been written, so a failed write followed by a
	// retry does not announce the same transition twice.
	events       []event
	observations []func(*Metrics)

	// deleted is set when the reconcile deleted the At (its TTL was up):
	// there is no status left to write.
	deleted bool
}

type event struct {
	eventType, reason, note string
}

func newScope(at *cnatv1beta1.At, now time.Time) *scope {
	status := at.Status.DeepCopy()
	status.ObservedGeneration = at.Generation
	return &scope{at: at, now: now, status: status}
}

// scheduledTime parses the At's schedule.
func (s *scope) scheduledTime() (time.Time, error) {
	return scheduler.ParseSchedule(s.at.Spec.Schedule, ptr.Deref(s.at.Spec.TimeZone, ""))
}

// plan is the At's schedule, deadline and suspension, for the scheduler.
func (s *scope) plan(scheduled time.Time) scheduler.Plan {
	p := scheduler.Plan{ScheduledTime: scheduled, Suspend: ptr.Deref(s.at.Spec.Suspend, false)}
	if d := s.at.Spec.StartingDeadlineSeconds; d != nil {
		p.StartingDeadline = ptr.To(time.Duration(*d) * time.Second)
	}
	return p
}

// backoffLimit is how many retries the At allows.
func (s *scope) backoffLimit() int32 {
	return ptr.Deref(s.at.Spec.BackoffLimit, 0)
}

func (s *scope) emit(eventType, reason, note string) {
	s.events = append(s.events, event{eventType: eventType, reason: reason, note: note})
}

func (s *scope) observe(f func(*Metrics)) {
	s.observations = append(s.observations, f)
}

// timestamp is a time as the API stores it: to the second.
func timestamp(t time.Time) *metav1.Time {
	return ptr.To(metav1.NewTime(t).Rfc3339Copy())
}

// setCondition sets a condition of the At's status, keeping its transition
// time when its status did not change.
func (s *scope) setCondition(conditionType string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&s.status.Conditions, metav1.Condition{
		Type:               conditionType,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: s.at.Generation,
		LastTransitionTime: *timestamp(s.now),
	})
}
