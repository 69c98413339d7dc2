package webhook

import (
	"time"

	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/utils/clock"
)

// Recent holds answers of the API server that admission reuses for a short
// while, by key: the guard's "allowed" (AllowedFor) and the dry run's
// verdicts that a Pod is valid (VerdictFor). At most 4 096 keys, the least
// recently used dropped first (client-go's LRUExpireCache). Only the
// answers that admit are ever remembered: a refusal or a check that could
// not be made is asked again. A nil *Recent remembers nothing.
type Recent[V any] struct {
	cache *utilcache.LRUExpireCache
	ttl   time.Duration
}

// NewRecent returns an empty Recent whose answers last ttl on the real
// clock.
func NewRecent[V any](ttl time.Duration) *Recent[V] {
	return newRecent[V](clock.RealClock{}, ttl)
}

func newRecent[V any](c utilcache.Clock, ttl time.Duration) *Recent[V] {
	return &Recent[V]{cache: utilcache.NewLRUExpireCacheWithClock(4096, c), ttl: ttl}
}

// get returns the answer remembered for key, if it is still fresh.
func (r *Recent[V]) get(key string) (V, bool) {
	var zero V
	if r == nil {
		return zero, false
	}
	v, ok := r.cache.Get(key)
	if !ok {
		return zero, false
	}
	return v.(V), true
}

// remember keeps answer for key for the Recent's ttl.
func (r *Recent[V]) remember(key string, answer V) {
	if r != nil {
		r.cache.Add(key, answer, r.ttl)
	}
}
