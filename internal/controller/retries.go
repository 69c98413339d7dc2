package controller

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// maxRetryDelay bounds the wait after an error: a refused Pod is tried
// again at least this often, since a refusal lifted is no event on the At
// or its Pods.
const maxRetryDelay = 30 * time.Second

// retryBaseDelay is the first wait after an error; it doubles with each
// error of the same At in a row, up to maxRetryDelay.
const retryBaseDelay = time.Second

// namespaceRetryRate is how many retries a second the failing Ats of one
// namespace share at the normal priority: up to crowdedRetries of them.
const namespaceRetryRate = 10

// crowdedRetries is how many failing Ats a namespace has when its share
// reaches maxRetryDelay: beyond, its retries go behind all other work.
const crowdedRetries = namespaceRetryRate * int(maxRetryDelay/time.Second)

// retryLimiter times an At's retries by the later of its own backoff and
// its namespace's share (namespaceShares), never later than maxRetryDelay.
// Neither is shared between namespaces: a co-tenant's Ats refused on every
// try (their own quota full) can neither use up another namespace's
// retries nor, retried without end, take the workers that everyone's
// first starts need (namespaceShares.priority).
func retryLimiter(shares *namespaceShares) workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](retryBaseDelay, maxRetryDelay),
		shares,
	)
}

// namespaceShares spreads the retries of a namespace's failing Ats (those
// whose last reconcile failed) over namespaceRetryRate a second: n of them
// each wait n / namespaceRetryRate, up to maxRetryDelay. Beyond
// crowdedRetries the wait stays at maxRetryDelay and the retries are
// queued at low priority: they take only the workers no other At needs,
// and a wait is never longer than what is failing now. It counts Ats
// failing now, not past retries: an At that succeeds, or is deleted, is
// forgotten at once, and reconciles of one At (its edits) count once.
type namespaceShares struct {
	mu      sync.Mutex
	failing map[string]sets.Set[string] // At names by namespace
}

func newNamespaceShares() *namespaceShares {
	return &namespaceShares{failing: map[string]sets.Set[string]{}}
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
	return min(time.Duration(ats.Len())*time.Second/namespaceRetryRate, maxRetryDelay)
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

// priority is the work-queue priority of the retry of req, which just
// failed: low while its namespace, counting it, has more than
// crowdedRetries failing Ats, else the normal one.
func (n *namespaceShares) priority(req reconcile.Request) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	failing := n.failing[req.Namespace].Len()
	if !n.failing[req.Namespace].Has(req.Name) {
		failing++
	}
	if failing > crowdedRetries {
		return handler.LowPriority
	}
	return 0
}
