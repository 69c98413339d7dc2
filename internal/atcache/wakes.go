package atcache

import (
	"container/heap"
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// setWake has the heap wake e at t (Unix nanoseconds), or earlier if it
// already would. Called with mu held.
func (s *Store) setWake(e *atEntry, t int64) {
	t = max(t, 1)
	switch {
	case e.index < 0:
		e.wake = t
		heap.Push(&s.wakes, e)
	case t < e.wake:
		e.wake = t
		heap.Fix(&s.wakes, e.index)
	default:
		return
	}
	if e.index == 0 {
		select {
		case s.rearm <- struct{}{}:
		default:
		}
	}
}

// enqueue hands key to the controller, if it runs. Called with mu held.
func (s *Store) enqueue(key types.NamespacedName) {
	if s.queue != nil {
		s.queue.Add(reconcile.Request{NamespacedName: key})
	}
}

// runWakes hands the At of each wake-up that is due to the queue, with one
// timer for the earliest.
func (s *Store) runWakes(ctx context.Context) {
	for {
		s.mu.Lock()
		now := s.clock.Now().UnixNano()
		for len(s.wakes) > 0 && s.wakes[0].wake <= now {
			e := heap.Pop(&s.wakes).(*atEntry)
			e.wake = 0
			s.enqueue(e.key())
		}
		next := time.Duration(-1)
		if len(s.wakes) > 0 {
			next = time.Duration(s.wakes[0].wake - now)
		}
		s.mu.Unlock()
		var fire <-chan time.Time
		var timer clock.Timer
		if next >= 0 {
			timer = s.clock.NewTimer(next)
			fire = timer.C()
		}
		select {
		case <-ctx.Done():
		case <-fire:
		case <-s.rearm:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// wakeHeap orders entries by wake-up time (container/heap).
type wakeHeap []*atEntry

func (h wakeHeap) Len() int           { return len(h) }
func (h wakeHeap) Less(i, j int) bool { return h[i].wake < h[j].wake }
func (h wakeHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *wakeHeap) Push(x any) {
	e := x.(*atEntry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *wakeHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.index = -1
	return e
}
