package controller

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cnatac "github.com/programming-kubernetes/cnat/api/applyconfiguration/api/v1beta1"
	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// The mark functions below are the only places that set an At's phase.
// Each sets the phase, reason and message, the conditions that go with the
// phase, and queues the Event that announces it.

// markPending: waiting for the schedule, or suspended.
func (s *scope) markPending(reason, message string) {
	if s.status.Phase == "" {
		s.emit(corev1.EventTypeNormal, cnatv1beta1.ReasonScheduled, message)
	}
	s.status.Phase = cnatv1beta1.PhasePending
	s.status.Reason, s.status.Message = reason, message
	s.setCondition(cnatv1beta1.ConditionReady, metav1.ConditionTrue, reason, message)
	s.removeConditions(cnatv1beta1.ConditionReconciling, cnatv1beta1.ConditionStalled)
}

// markInvalid: the spec cannot be acted on. Nothing runs until it changes.
func (s *scope) markInvalid(message string) {
	if s.status.Phase == "" {
		s.status.Phase = cnatv1beta1.PhasePending
	}
	if s.status.Reason != cnatv1beta1.ReasonInvalidSpec || s.status.Message != message {
		s.emit(corev1.EventTypeWarning, cnatv1beta1.ReasonInvalidSpec, message)
	}
	s.status.Reason, s.status.Message = cnatv1beta1.ReasonInvalidSpec, message
	s.setCondition(cnatv1beta1.ConditionReady, metav1.ConditionFalse, cnatv1beta1.ReasonInvalidSpec, message)
	s.setCondition(cnatv1beta1.ConditionStalled, metav1.ConditionTrue, cnatv1beta1.ReasonInvalidSpec, message)
	s.removeConditions(cnatv1beta1.ConditionReconciling)
}

// markPodForbidden: the API server refused the Pod (quota, policy); the
// controller keeps trying.
func (s *scope) markPodForbidden(message string) {
	if s.status.Phase == "" {
		s.status.Phase = cnatv1beta1.PhasePending
	}
	if s.status.Reason != cnatv1beta1.ReasonPodForbidden {
		s.emit(corev1.EventTypeWarning, cnatv1beta1.ReasonPodForbidden, message)
	}
	s.status.Reason, s.status.Message = cnatv1beta1.ReasonPodForbidden, message
	s.setCondition(cnatv1beta1.ConditionReady, metav1.ConditionFalse, cnatv1beta1.ReasonPodForbidden, message)
	s.setCondition(cnatv1beta1.ConditionReconciling, metav1.ConditionTrue, cnatv1beta1.ReasonPodForbidden, message)
	s.removeConditions(cnatv1beta1.ConditionStalled)
}

// markRunning: attempt's Pod runs (or is about to). Started is announced
// when the attempt is new to the status.
func (s *scope) markRunning(attempt int32, podName string) {
	message := fmt.Sprintf("Pod %s runs attempt %d of %d", podName, attempt, s.backoffLimit()+1)
	if s.status.Phase != cnatv1beta1.PhaseRunning || s.status.Attempts != attempt {
		s.emit(corev1.EventTypeNormal, cnatv1beta1.ReasonStarted, message)
	}
	s.status.Phase = cnatv1beta1.PhaseRunning
	s.status.Attempts = attempt
	s.status.PodName = podName
	if s.status.StartTime == nil {
		s.status.StartTime = timestamp(s.now)
	}
	s.status.Reason, s.status.Message = cnatv1beta1.ReasonRunning, message
	s.setCondition(cnatv1beta1.ConditionReady, metav1.ConditionFalse, cnatv1beta1.ReasonRunning, message)
	s.setCondition(cnatv1beta1.ConditionReconciling, metav1.ConditionTrue, cnatv1beta1.ReasonRunning, message)
	s.removeConditions(cnatv1beta1.ConditionStalled)
}

// markRetrying: attempt failed, another one starts at retryAt.
func (s *scope) markRetrying(attempt int32, result podResult, message string) {
	if s.status.Reason != cnatv1beta1.ReasonRetrying || s.status.Attempts != attempt {
		s.emit(corev1.EventTypeWarning, cnatv1beta1.ReasonRetrying, message)
	}
	s.status.Phase = cnatv1beta1.PhaseRunning
	s.status.Attempts = attempt
	s.status.ExitCode = result.exitCode
	s.status.Reason, s.status.Message = cnatv1beta1.ReasonRetrying, message
	s.setCondition(cnatv1beta1.ConditionReady, metav1.ConditionFalse, cnatv1beta1.ReasonRetrying, message)
	s.setCondition(cnatv1beta1.ConditionReconciling, metav1.ConditionTrue, cnatv1beta1.ReasonRetrying, message)
	s.removeConditions(cnatv1beta1.ConditionStalled)
}

// markSucceeded: the command exited 0.
func (s *scope) markSucceeded(result podResult) {
	message := "The command exited 0"
	if result.message != "" {
		message += ": " + result.message
	}
	s.finish(cnatv1beta1.PhaseSucceeded, cnatv1beta1.ReasonCompleted, message, result)
	s.setCondition(cnatv1beta1.ConditionReady, metav1.ConditionTrue, cnatv1beta1.ReasonCompleted, message)
	s.setCondition(cnatv1beta1.ConditionSucceeded, metav1.ConditionTrue, cnatv1beta1.ReasonCompleted, message)
	s.setCondition(cnatv1beta1.ConditionFailed, metav1.ConditionFalse, cnatv1beta1.ReasonCompleted, message)
	s.removeConditions(cnatv1beta1.ConditionReconciling, cnatv1beta1.ConditionStalled)
	s.emit(corev1.EventTypeNormal, string(cnatv1beta1.PhaseSucceeded), message)
	s.observe(func(m *Metrics) { m.recordOutcome(cnatv1beta1.PhaseSucceeded) })
}

// markFailed: the last attempt failed and no retry is left, or the Pod was
// deleted before it finished.
func (s *scope) markFailed(reason, message string, result podResult) {
	s.finish(cnatv1beta1.PhaseFailed, reason, message, result)
	s.setCondition(cnatv1beta1.ConditionReady, metav1.ConditionFalse, reason, message)
	s.setCondition(cnatv1beta1.ConditionStalled, metav1.ConditionTrue, reason, message)
	s.setCondition(cnatv1beta1.ConditionSucceeded, metav1.ConditionFalse, reason, message)
	s.setCondition(cnatv1beta1.ConditionFailed, metav1.ConditionTrue, reason, message)
	s.removeConditions(cnatv1beta1.ConditionReconciling)
	s.emit(corev1.EventTypeWarning, string(cnatv1beta1.PhaseFailed), message)
	s.observe(func(m *Metrics) { m.recordOutcome(cnatv1beta1.PhaseFailed) })
}

// markMissed: the starting deadline passed before the At could start.
func (s *scope) markMissed(message string) {
	s.finish(cnatv1beta1.PhaseMissed, cnatv1beta1.ReasonMissed, message, podResult{})
	s.setCondition(cnatv1beta1.ConditionReady, metav1.ConditionFalse, cnatv1beta1.ReasonMissed, message)
	s.setCondition(cnatv1beta1.ConditionStalled, metav1.ConditionTrue, cnatv1beta1.ReasonMissed, message)
	s.setCondition(cnatv1beta1.ConditionSucceeded, metav1.ConditionFalse, cnatv1beta1.ReasonMissed, message)
	s.setCondition(cnatv1beta1.ConditionFailed, metav1.ConditionFalse, cnatv1beta1.ReasonMissed, message)
	s.removeConditions(cnatv1beta1.ConditionReconciling)
	s.emit(corev1.EventTypeWarning, cnatv1beta1.ReasonMissed, message)
	s.observe(func(m *Metrics) { m.recordOutcome(cnatv1beta1.PhaseMissed) })
}

// finish records a terminal phase and the result it ended with.
func (s *scope) finish(phase cnatv1beta1.Phase, reason, message string, result podResult) {
	s.status.Phase = phase
	s.status.Reason, s.status.Message = reason, message
	if result.exitCode != nil {
		s.status.ExitCode = result.exitCode
	}
	completion := s.now
	if !result.finishedAt.IsZero() {
		completion = result.finishedAt
	}
	s.status.CompletionTime = timestamp(completion)
}

// refreshObservedGeneration marks every condition of a finished At as
// describing its current generation: a finished At is what it is, whatever
// was edited since, and kstatus reads a stale observedGeneration as
// "in progress".
func (s *scope) refreshObservedGeneration() {
	for i := range s.status.Conditions {
		s.status.Conditions[i].ObservedGeneration = s.at.Generation
	}
}

func (s *scope) removeConditions(conditionTypes ...string) {
	for _, t := range conditionTypes {
		meta.RemoveStatusCondition(&s.status.Conditions, t)
	}
}

// statusApplyConfiguration is the status apply request for status. The
// apply configuration types are the JSON form of the API types, so the JSON
// encoding converts one into the other field for field.
func statusApplyConfiguration(at *cnatv1beta1.At, status *cnatv1beta1.AtStatus) (*cnatac.AtApplyConfiguration, error) {
	raw, err := json.Marshal(status)
	if err != nil {
		return nil, fmt.Errorf("encoding status: %w", err)
	}
	statusAC := cnatac.AtStatus()
	if err := json.Unmarshal(raw, statusAC); err != nil {
		return nil, fmt.Errorf("decoding status: %w", err)
	}
	return cnatac.At(at.Name, at.Namespace).WithStatus(statusAC), nil
}
