package controller

import (
	"context"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/controller/atstatus"
	"github.com/programming-kubernetes/cnat/internal/lifecycle"
)

// writeStatus applies status (atstatus.Status: not when it equals what the
// controller owns already, and only over the At it was decided on), then
// emits the Events and metrics of the change.
func (r *AtReconciler) writeStatus(ctx context.Context, at *cnatv1beta1.At, status *cnatv1beta1.AtStatus) error {
	written, err := atstatus.Status(ctx, r.Client, at, status)
	if err != nil || !written {
		return err
	}
	for _, e := range lifecycle.Events(&at.Status, status) {
		r.Recorder.Eventf(at, nil, e.Type, e.Reason, e.Reason, "%s", e.Note)
	}
	if status.Phase.Finished() && !at.Status.Phase.Finished() {
		r.Metrics.recordOutcome(status.Phase)
	}
	return nil
}
