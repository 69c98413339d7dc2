package atpod

import (
	"errors"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// PodFieldsInvalid reports whether err, from creating a rendered Pod, is the
// API server's own validation of the Pod's fields: Invalid, about the kind
// Pod of the core group, every cause naming a field (apierrors.NewInvalid).
// Those fields are the At's spec rendered, so the same Pod is refused again
// until the spec changes. An admission plugin's refusal is about the
// resource "pods" instead (admission.NewForbidden, also for a
// ValidatingAdmissionPolicy's 422 Invalid), and a webhook's has whatever it
// says: they can change without the At changing. Admission plugins choose
// HTTP codes freely, so the code alone says nothing.
func PodFieldsInvalid(err error) bool {
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

// ServerFailed reports whether err is the API server failing to decide (an
// error of its own, a webhook it could not call, a timeout, throttling): the
// same request may succeed unchanged later.
func ServerFailed(err error) bool {
	return apierrors.IsInternalError(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsTooManyRequests(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsUnexpectedServerError(err)
}
