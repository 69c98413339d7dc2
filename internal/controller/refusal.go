package controller

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/atpod"
)

// judgeRefusal reads a Pod create's error by what it means, not its HTTP code,
// and returns the reason the At reports; every refusal is retried until the
// starting deadline (what refused can change without the At changing).
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
