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

// fired says whether the At has started a run. Its status says so once it
// counts an attempt (the CRD's CEL rules read that alone); before, the Pod
// of its first attempt says so: the controller creates the Pod at the At's
// time and records it in the status only when the Pod's watch event comes
// back, so that many Ats due at once each cost one request before the next
// starts. Between the two, the Pod runs the spec as it was, and the spec
// must not change under it. The Pod is read from the API server, not from a
// cache that may not show it yet.
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
