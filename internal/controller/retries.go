package controller

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// maxRetryDelay bounds the backoff after an error: a refused Pod is tried
// again this often, since a refusal lifted is no event on the At or its Pods.
const maxRetryDelay = 30 * time.Second

// retryBaseDelay is the first wait after an error; it doubles with each
// error of the same At in a row, up to maxRetryDelay.
const retryBaseDelay = time.Second

// namespaceRetryRate is how many retries a second the failing Ats of one
// namespace share: up to 300 of them keep maxRetryDelay.
const namespaceRetryRate = 10

// retryLimiter times an At's retries by the later of its own backoff and
// its namespace's share (namespaceShares). Neither is shared between
// namespaces: a co-tenant's Ats refused on every try (their own quota full)
// can neither use up another namespace's retries nor, retried without end,
// fill the workers that everyone's first starts need.
func retryLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](retryBaseDelay, maxRetryDelay),
		&namespaceShares{failing: map[string]sets.Set[string]{}},
	)
}

// namespaceShares spreads the retries of a namespace's failing Ats (those
// whose last reconcile failed) over namespaceRetryRate a second: n of them
// each wait n / namespaceRetryRate. It counts Ats failing now, not past
// retries: an At that succeeds, or is deleted, is forgotten at once, and
// reconciles of one At (its edits) count once.
type namespaceShares struct {
	mu      sync.Mutex
	failing map[string]sets.Set[string] // At names by namespace
}

func (n *namespaceShares) When(req reconcile.Request) time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	ats := n.failing[req.Namespace]
	if ats == nil {
		ats = sets.New[string]()
		n.failing[req.Namespace] = ats
	}
	ats.Insert(req.Name)
	return time.Duration(ats.Len()) * time.Second / namespaceRetryRate
}

func (n *namespaceShares) Forget(req reconcile.Request) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.failing[req.Namespace].Delete(req.Name)
	if n.failing[req.Namespace].Len() == 0 {
		delete(n.failing, req.Namespace)
	}
}

func (n *namespaceShares) NumRequeues(reconcile.Request) int { return 0 }
