package atstatus

import (
	"context"
	"encoding/json"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/programming-kubernetes/cnat/api/applyconfiguration"
	cnatac "github.com/programming-kubernetes/cnat/api/applyconfiguration/api/v1beta1"
	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// StatusFieldManager owns the status of At objects: the controller applies
// the whole status under it, and Status compares what it would apply with
// what this manager owns. The controller's cache keeps this manager's
// managed fields of an At, and no other's.
const StatusFieldManager = "cnat-controller-status"

// Status applies status as at's status under StatusFieldManager, unless it
// equals at's status (Unchanged: a write for nothing would wake every
// watcher of the At), and reports whether it wrote. It compares with the
// status itself, not with what the managed fields say the writer owns:
// anyone who may patch an At may write its managed fields. The
// apply carries the resourceVersion of at: a decision made on an At that has
// changed since (a lagging cache, a second replica) is refused with a
// conflict, never written over a newer status. It forces ownership: the
// status is the controller's record, which a field another manager took
// must not block.
func Status(ctx context.Context, c client.Client, at *cnatv1beta1.At, status *cnatv1beta1.AtStatus) (bool, error) {
	desired, err := statusApplyConfiguration(at, status)
	if err != nil {
		return false, err
	}
	live, err := statusApplyConfiguration(at, &at.Status)
	if err != nil {
		return false, err
	}
	tc := applyconfiguration.NewTypeConverter(c.Scheme())
	unchanged, err := Unchanged(tc, desired, live)
	if err != nil || unchanged {
		return false, err
	}
	log.FromContext(ctx).V(1).Info("Writing status", "phase", status.Phase, "reason", status.Reason, "attempts", status.Attempts)
	stale, err := leftBehind(tc, at, desired)
	if err != nil {
		return false, err
	}
	if stale {
		// An update replaces the status whole, on the same condition.
		updated := at.DeepCopy()
		updated.Status = *status.DeepCopy()
		if err := c.Status().Update(ctx, updated, client.FieldOwner(StatusFieldManager)); err != nil {
			return false, fmt.Errorf("updating status (an apply would leave fields it does not own): %w", err)
		}
		return true, nil
	}
	desired.WithResourceVersion(at.ResourceVersion)
	if err := c.Status().Apply(ctx, desired, client.FieldOwner(StatusFieldManager), client.ForceOwnership); err != nil {
		return false, fmt.Errorf("applying status: %w", err)
	}
	return true, nil
}

// statusApplyConfiguration is the status apply request for status. The
// apply configuration types are the JSON form of the API types and the
// generated code has no conversion from the typed status, so the JSON
// encoding is the one faithful conversion, field for field, that needs no
// change when a status field is added.
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
