package lifecycle

import (
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// conditionTypes are the conditions an At reports, in the README's order.
var conditionTypes = []string{
	cnatv1beta1.ConditionReady,
	cnatv1beta1.ConditionReconciling,
	cnatv1beta1.ConditionStalled,
	cnatv1beta1.ConditionSucceeded,
	cnatv1beta1.ConditionFailed,
}

// Conditions is the one place that says which conditions an At in phase,
// for reason, carries and with which status; a type it leaves out is
// removed. The README's table of phases and conditions is this function
// (TestConditionsMatchREADME holds them together).
func Conditions(phase cnatv1beta1.Phase, reason string) map[string]metav1.ConditionStatus {
	const yes, no = metav1.ConditionTrue, metav1.ConditionFalse
	switch phase {
	case cnatv1beta1.PhasePending:
		switch reason {
		case cnatv1beta1.ReasonInvalidSpec:
			return map[string]metav1.ConditionStatus{cnatv1beta1.ConditionReady: no, cnatv1beta1.ConditionStalled: yes}
		case cnatv1beta1.ReasonPodForbidden, cnatv1beta1.ReasonPodCreateFailed, cnatv1beta1.ReasonPodNameTaken,
			cnatv1beta1.ReasonPodInvalid, cnatv1beta1.ReasonAuthorForbidden:
			return map[string]metav1.ConditionStatus{cnatv1beta1.ConditionReady: no, cnatv1beta1.ConditionReconciling: yes}
		}
		return map[string]metav1.ConditionStatus{cnatv1beta1.ConditionReady: yes}
	case cnatv1beta1.PhaseRunning:
		return map[string]metav1.ConditionStatus{cnatv1beta1.ConditionReady: no, cnatv1beta1.ConditionReconciling: yes}
	case cnatv1beta1.PhaseSucceeded:
		return map[string]metav1.ConditionStatus{
			cnatv1beta1.ConditionReady: yes, cnatv1beta1.ConditionSucceeded: yes, cnatv1beta1.ConditionFailed: no,
		}
	case cnatv1beta1.PhaseFailed:
		return map[string]metav1.ConditionStatus{
			cnatv1beta1.ConditionReady: no, cnatv1beta1.ConditionStalled: yes,
			cnatv1beta1.ConditionSucceeded: no, cnatv1beta1.ConditionFailed: yes,
		}
	case cnatv1beta1.PhaseMissed:
		return map[string]metav1.ConditionStatus{
			cnatv1beta1.ConditionReady: no, cnatv1beta1.ConditionStalled: yes,
			cnatv1beta1.ConditionSucceeded: no, cnatv1beta1.ConditionFailed: no,
		}
	}
	return nil
}

// setPhase sets phase, reason and message, and the conditions that go with
// them (Conditions), each with the At's generation.
func setPhase(st *cnatv1beta1.AtStatus, at *cnatv1beta1.At, now time.Time, phase cnatv1beta1.Phase, reason, message string) {
	st.Phase, st.Reason, st.Message = phase, reason, message
	want := Conditions(phase, reason)
	for _, t := range conditionTypes {
		status, ok := want[t]
		if !ok {
			meta.RemoveStatusCondition(&st.Conditions, t)
			continue
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type:               t,
			Status:             status,
			Reason:             reason,
			Message:            message,
			ObservedGeneration: at.Generation,
			LastTransitionTime: *timestamp(now),
		})
	}
}

// timestamp is a time as the API stores it: to the second.
func timestamp(t time.Time) *metav1.Time {
	return ptr.To(metav1.NewTime(t).Rfc3339Copy())
}

// Event is an Event to emit on the At once the status that reports it is
// written.
type Event struct {
	Type, Reason, Note string
}

// maxEventNoteLength is the longest note, in bytes, of an events.k8s.io/v1 Event.
const maxEventNoteLength = 1024

// Events are the Events that announce the change from before to after (which
// the README's Status lists, and why no more); from the two statuses alone, so
// a status written twice is announced once. An Event per pending At would also
// grow the Event recorder's cache (6 to 12 minutes each) with the Ats.
func Events(before, after *cnatv1beta1.AtStatus) []Event {
	if after == nil {
		return nil
	}
	var events []Event
	add := func(eventType, reason string) {
		events = append(events, Event{Type: eventType, Reason: reason, Note: truncateBytes(after.Message, maxEventNoteLength)})
	}
	newReason := before.Reason != after.Reason || before.Attempts != after.Attempts
	switch {
	case after.Phase.Finished():
		if before.Phase.Finished() {
			return nil
		}
		eventType := corev1.EventTypeWarning
		if after.Phase == cnatv1beta1.PhaseSucceeded {
			eventType = corev1.EventTypeNormal
		}
		add(eventType, string(after.Phase))
	case after.Reason == cnatv1beta1.ReasonInvalidSpec:
		if before.Reason != after.Reason || before.Message != after.Message {
			add(corev1.EventTypeWarning, after.Reason)
		}
	case newReason && refused(after.Reason):
		// Also on the first look: a refusal is what the user must hear.
		add(corev1.EventTypeWarning, after.Reason)
	case newReason && (after.Reason == cnatv1beta1.ReasonRetrying || after.Reason == cnatv1beta1.ReasonPodPending ||
		after.Reason == cnatv1beta1.ReasonPodStopping):
		add(corev1.EventTypeWarning, after.Reason)
	}
	return events
}

// refused reports whether reason says the At's Pod could not be created.
func refused(reason string) bool {
	switch reason {
	case cnatv1beta1.ReasonPodForbidden, cnatv1beta1.ReasonPodCreateFailed, cnatv1beta1.ReasonPodNameTaken,
		cnatv1beta1.ReasonPodInvalid, cnatv1beta1.ReasonAuthorForbidden:
		return true
	}
	return false
}

// NotCreated is the status of an At whose Pod was refused, for reason: the
// status it had, the refusal its reason and message, the attempt not started.
func NotCreated(at *cnatv1beta1.At, d Decision, now time.Time, reason, message string) *cnatv1beta1.AtStatus {
	st := at.Status.DeepCopy()
	st.ObservedGeneration = at.Generation
	if d.Status != nil {
		st.ScheduledTime = d.Status.ScheduledTime
	}
	phase := st.Phase
	if phase == "" {
		phase = cnatv1beta1.PhasePending
	}
	setPhase(st, at, now, phase, reason, message)
	bound(st)
	return st
}

// bound cuts the messages of st to the CRD's MaxMessageLength characters:
// they carry others' text of any length, and a refused status says nothing.
func bound(st *cnatv1beta1.AtStatus) {
	if st == nil {
		return
	}
	st.Message = truncateCharacters(st.Message, cnatv1beta1.MaxMessageLength)
	for i := range st.Conditions {
		st.Conditions[i].Message = truncateCharacters(st.Conditions[i].Message, cnatv1beta1.MaxMessageLength)
	}
}

// truncatedSuffix ends a message that was cut.
const truncatedSuffix = " ... (truncated)"

// truncateCharacters cuts s to limit code points (as a schema's maxLength
// counts), truncatedSuffix included; the result is valid UTF-8.
func truncateCharacters(s string, limit int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	keep := limit - utf8.RuneCountInString(truncatedSuffix)
	for i := range s {
		if keep == 0 {
			return s[:i] + truncatedSuffix
		}
		keep--
	}
	return s
}

// truncateBytes cuts s to limit bytes at a character boundary, truncatedSuffix included.
func truncateBytes(s string, limit int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= limit {
		return s
	}
	end := limit - len(truncatedSuffix)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + truncatedSuffix
}
