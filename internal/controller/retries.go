package controller

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// maxRetryDelay bounds the backoff after an error: a refused Pod is tried
// again this often, since a refusal lifted is no event on the At or its Pods.
const maxRetryDelay = 30 * time.Second

// retryBaseDelay is the first wait after an error; it doubles with each
// error of the same At in a row, up to maxRetryDelay.
const retryBaseDelay = time.Second

// retryRate and retryBurst are the retries a namespace's Ats share:
// controller-runtime's default budget (10 a second, bursts of 100), given
// to each namespace instead of to all.
const (
	retryRate  = rate.Limit(10)
	retryBurst = 100
)

// retryLimiter times an At's retries by its own backoff and its namespace's
// budget, whichever is later. Neither is shared between namespaces: a
// co-tenant's Ats refused on every try (their own quota full) can neither
// use up the retries of another namespace's Ats nor, retried without end,
// fill the workers that everyone's first starts need.
func retryLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](retryBaseDelay, maxRetryDelay),
		&namespaceBudgets{budgets: map[string]*rate.Limiter{}},
	)
}

// namespaceBudgets is a token bucket per namespace (one rate.Limiter each,
// kept for the controller's life: a few hundred bytes a namespace).
type namespaceBudgets struct {
	mu      sync.Mutex
	budgets map[string]*rate.Limiter
}

func (n *namespaceBudgets) When(req reconcile.Request) time.Duration {
	n.mu.Lock()
	budget := n.budgets[req.Namespace]
	if budget == nil {
		budget = rate.NewLimiter(retryRate, retryBurst)
		n.budgets[req.Namespace] = budget
	}
	n.mu.Unlock()
	return budget.Reserve().Delay()
}

func (n *namespaceBudgets) Forget(reconcile.Request) {}

func (n *namespaceBudgets) NumRequeues(reconcile.Request) int { return 0 }
