package controller

import (
	"context"
	"encoding/json"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/programming-kubernetes/cnat/api/applyconfiguration"
	cnatac "github.com/programming-kubernetes/cnat/api/applyconfiguration/api/v1beta1"
	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/apply"
	"github.com/programming-kubernetes/cnat/internal/lifecycle"
)

// writeStatus applies status under the status field manager, unless it
// equals what that manager already owns, then emits the Events and metrics
// of the change. The apply carries the resourceVersion of the At it was
// decided on: a decision made on an At that has changed since (a lagging
// cache, a second replica) is refused with a conflict, never written over a
// newer status.
func (r *AtReconciler) writeStatus(ctx context.Context, at *cnatv1beta1.At, status *cnatv1beta1.AtStatus) error {
	desired, err := statusApplyConfiguration(at, status)
	if err != nil {
		return err
	}
	owned, err := cnatac.ExtractAtStatus(at, cnatv1beta1.StatusFieldManager)
	if err != nil {
		return fmt.Errorf("reading the status fields owned by %s: %w", cnatv1beta1.StatusFieldManager, err)
	}
	unchanged, err := apply.Unchanged(applyconfiguration.NewTypeConverter(r.Client.Scheme()), desired, owned)
	if err != nil {
		return err
	}
	if unchanged {
		return nil
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Writing status", "phase", status.Phase, "reason", status.Reason, "attempts", status.Attempts)
	desired.WithResourceVersion(at.ResourceVersion)
	if err := r.Client.Status().Apply(ctx, desired, client.FieldOwner(cnatv1beta1.StatusFieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying status: %w", err)
	}
	for _, e := range lifecycle.Events(&at.Status, status) {
		r.Recorder.Eventf(at, nil, e.Type, e.Reason, e.Reason, "%s", e.Note)
	}
	if status.Phase.Finished() && !at.Status.Phase.Finished() {
		r.Metrics.recordOutcome(status.Phase)
	}
	return nil
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
