package controller

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/apply"
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
// Only the API server's own validation of the Pod's fields is terminal
// (apply.PodFieldsInvalid): the At's spec determines those fields, so the
// same Pod would be refused again. Everything else can change without the
// At changing (a policy lifted, a quota raised, a webhook back), so it is
// retried, as is every error of the server's own.
func judgeRefusal(err error) refusal {
	if apply.PodFieldsInvalid(err) {
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
