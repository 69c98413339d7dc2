package atcache

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// dueWhileListing starts, on time, the Ats that come due while the store
// still lists every At after a start: until the list is done it asks the
// API server each second for the Ats due at the coming second, and for Ats
// with no status yet, and queues those it does not know (docs/architecture.md).
func (s *Store) dueWhileListing(ctx context.Context, reader client.Reader) {
	due := s.clock.Now().Truncate(time.Second).Add(time.Second)
	for {
		ats, err := listDue(ctx, reader, due)
		s.addUnknown(ats, err, max(due.Sub(s.clock.Now()), 0)+WakeUpPad)
		unwritten, err := listAtMetadata(ctx, reader, client.MatchingFields{cnatv1beta1.FieldPhase: ""}, client.Limit(newPerPoll))
		s.addUnknown(unwritten, err, 0)
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

// newPerPoll bounds the Ats without a status that dueWhileListing asks for each
// second; their reconciles take them out of the selection.
const newPerPoll = 500

// addUnknown hands to the queue, after wait, the listed Ats the store does not
// know yet (the queue is set: dueWhileListing starts once it is attached).
func (s *Store) addUnknown(ats *metav1.PartialObjectMetadataList, err error, wait time.Duration) {
	if err != nil {
		s.log.V(1).Info("Could not list the Ats due while listing every At", "error", err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, item := range ats.Items {
		if key := (types.NamespacedName{Namespace: item.Namespace, Name: item.Name}); s.entries[key] == nil {
			s.queue.AddAfter(reconcile.Request{NamespacedName: key}, wait)
		}
	}
}
