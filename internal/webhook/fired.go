package webhook

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/atpod"
)

// fired says whether the At has started a run: its status counts an attempt
// (all CEL can see), or the Pod of its first attempt, read uncached, exists
// though the status does not record it yet; the spec must not change under it.
func (v *AtValidator) fired(ctx context.Context, at *cnatv1beta1.At) (bool, error) {
	if at.Status.Attempts > 0 {
		return true, nil
	}
	pod := &corev1.Pod{}
	err := v.Reader.Get(ctx, client.ObjectKey{Namespace: at.Namespace, Name: atpod.PodName(at, 1)}, pod)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, apierrors.NewInternalError(fmt.Errorf("reading the Pod of the At's first attempt: %w", err))
	}
	// A Pod of that name that is not the At's run (PodNameTaken) started
	// nothing.
	_, notRun := atpod.RunOf(pod, at)
	return notRun == nil, nil
}
