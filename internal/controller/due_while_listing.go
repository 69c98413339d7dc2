package controller

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// dueWhileListing starts, on time, the Ats that come due while the store
// still lists every At after a start. The list streams in key order
// (namespace, name), so an At due seconds after a restart beside 100 000
// others may be listed only after its time; the store does not know it
// until then. Until the list is done, the API server is asked each second
// for the Ats due at the coming whole second — status.scheduledTime is a
// selectable field, and the status records times to the second — and
// those the store does not know yet are handed to the queue at that
// instant. A reconcile reads an At the store does not know from the API
// server while the store lists (effects.CachedAt). Ats already overdue at
// the start wait for the list, as they would without this.
func (s *atStore) dueWhileListing(ctx context.Context, reader client.Reader) {
	due := s.clock.Now().Truncate(time.Second).Add(time.Second)
	for {
		ats, err := listDue(ctx, reader, due)
		if err != nil {
			s.log.V(1).Info("Could not list the Ats due while listing every At", "due", due, "error", err.Error())
		}
		s.mu.Lock()
		for _, at := range ats.Items {
			key := types.NamespacedName{Namespace: at.Namespace, Name: at.Name}
			if s.entries[key] == nil && s.queue != nil {
				s.queue.AddAfter(reconcile.Request{NamespacedName: key}, max(due.Sub(s.clock.Now()), 0)+wakeUpPad)
			}
		}
		s.mu.Unlock()
		// The next instant is asked for a second ahead of it.
		select {
		case <-ctx.Done():
			return
		case <-s.synced:
			return
		case <-s.clock.After(due.Sub(s.clock.Now())):
		}
		due = due.Add(time.Second)
	}
}

// listed says whether the store has listed every At since its start.
func (s *atStore) listed() bool {
	select {
	case <-s.synced:
		return true
	default:
		return false
	}
}
