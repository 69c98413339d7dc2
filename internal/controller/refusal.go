package controller

import (
	"errors"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// refusal is what a refused Pod create means for the At: the reason it
// reports, and whether trying again can help before the spec changes.
type refusal struct {
	reason   string
	terminal bool
}

// judgeRefusal reads a Pod create's error by what it means, not by its HTTP
// code: admission plugins choose codes freely (a ValidatingAdmissionPolicy
// answers 422 Invalid by default, a webhook 400 or 403 as it likes, a
// webhook that is down 500, a quota 403).
//
// Only the API server's own validation of the Pod's fields is terminal: the
// At's spec determines those fields, so the same Pod would be refused again.
// The API server reports it as an Invalid error about the kind Pod, each
// cause naming a field of the Pod (apierrors.NewInvalid). An admission
// plugin's refusal is about the resource "pods" (admission.NewForbidden,
// also for a policy's Invalid), and a webhook's has whatever it says; both
// can change without the At changing (a policy lifted, a quota raised, a
// webhook back), so they are retried, as is every error of the server's own.
func judgeRefusal(err error) refusal {
	if podFieldsInvalid(err) {
		return refusal{reason: cnatv1beta1.ReasonInvalidSpec, terminal: true}
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || apierrors.IsInternalError(err) || apierrors.IsServerTimeout(err) ||
		apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) || apierrors.IsServiceUnavailable(err) ||
		apierrors.IsUnexpectedServerError(err) {
		return refusal{reason: cnatv1beta1.ReasonPodCreateFailed}
	}
	return refusal{reason: cnatv1beta1.ReasonPodForbidden}
}

// podFieldsInvalid reports whether err is the API server's validation of a
// Pod's fields: Invalid, about the kind Pod of the core group, every cause
// naming a field.
func podFieldsInvalid(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) {
		return false
	}
	s := status.Status()
	if s.Details == nil || s.Details.Group != "" || s.Details.Kind != "Pod" || len(s.Details.Causes) == 0 ||
		!strings.HasPrefix(s.Message, "Pod ") {
		return false
	}
	for _, cause := range s.Details.Causes {
		if cause.Field == "" {
			return false
		}
	}
	return true
}
