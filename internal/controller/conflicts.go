package controller

import (
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// A status write decided on an older copy of the At than the API server's
// (usually the controller's own write the watch has not brought yet) is
// refused with a conflict: not a fault, tried again after a short per-At
// backoff, not the errors' (retryLimiter, from 1 s).

// conflictBaseDelay is the first wait after a conflict; it doubles with
// each conflict of the same At in a row, up to maxRetryDelay.
const conflictBaseDelay = 100 * time.Millisecond

// newConflicts is the per-At backoff after conflicts.
func newConflicts() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](conflictBaseDelay, maxRetryDelay)
}
