package controller

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/atpod"
)

// judgeRefusal reads a Pod create's error by what it means, not by its HTTP
// code (admission plugins choose codes freely) and returns the reason the
// At reports. Every refusal is retried with the controller's bounded
// backoff until the At's starting deadline: a policy, a quota, a webhook,
// a LimitRange or the server itself change without the At changing, and
// the spec passed the same Pod validation when the At was admitted.
func judgeRefusal(err error) string {
	if atpod.PodFieldsInvalid(err) {
		return cnatv1beta1.ReasonPodInvalid
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || atpod.ServerFailed(err) {
		return cnatv1beta1.ReasonPodCreateFailed
	}
	return cnatv1beta1.ReasonPodForbidden
}
