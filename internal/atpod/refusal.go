package atpod

import (
	"errors"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// PodFieldsInvalid reports whether err, from creating a rendered Pod, is the
// API server's own validation of its fields (Invalid, of kind Pod, each cause
// a field), refused again until the spec changes, rather than an admission
// plugin's refusal, which is about the resource "pods" whatever its code.
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

// ServerFailed reports whether err is the API server failing to decide: the
// same request may succeed unchanged later.
func ServerFailed(err error) bool {
	return apierrors.IsInternalError(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsTooManyRequests(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsUnexpectedServerError(err)
}
