package controller

import (
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// A write of the At's status carries the resourceVersion of the At it was
// decided on, so a decision made on a copy older than the API server's is
// refused with a conflict. The controller's own status write of a moment
// ago is the usual cause: the store holds the At as its watch brought it,
// and under load the watch event of that write comes later than the Pod
// event that brings the next reconcile (two bursts of 1 000 Ats on the
// local cluster: 855 conflicts). A conflict is not a fault: the reconcile
// is tried again after a short backoff of its own At, on the copy the
// watch will have brought by then, not through the work queue's rate limit
// of errors (retryLimiter), whose overall 10 a second after a burst of 100
// would queue a burst's conflicts one behind the other, and whose error
// log would report each as a failure with its stack.

// conflictBaseDelay is the first wait after a conflict; it doubles with
// each conflict of the same At in a row, up to maxRetryDelay.
const conflictBaseDelay = 100 * time.Millisecond

// newConflicts is the per-At backoff after conflicts.
func newConflicts() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](conflictBaseDelay, maxRetryDelay)
}
