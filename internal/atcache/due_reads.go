package atcache

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// DueReads confirms the first starts of Ats due at one instant in one
// namespace with one LIST of their metadata, made after the instant, when
// more than one is being confirmed at once. The zero value is ready to use.
type DueReads struct {
	// flight makes the one LIST of an instant overlapping confirmations wait for.
	flight singleflight.Group

	mu       sync.Mutex
	instants map[dueInstant]*dueConfirmations
}

// dueInstant is what one LIST covers: a namespace's Ats due at one instant.
type dueInstant struct {
	namespace string
	due       time.Time
}

func (k dueInstant) String() string { return k.namespace + "/" + k.due.Format(time.RFC3339Nano) }

// dueConfirmations are the confirmations of one instant.
type dueConfirmations struct {
	// busy counts those under way.
	busy int
	// list is the instant's LIST, once it returned; it serves the rest of
	// the burst, even at moments when no confirmation is under way.
	list *dueList
}

// keepDueList is how long a LIST serves its burst (a thousand Ats start
// within it); a later confirmation reads afresh.
const keepDueList = time.Minute

// dueList is one LIST of the Ats due at an instant.
type dueList struct {
	started time.Time
	err     error

	mu  sync.Mutex
	ats map[types.NamespacedName]listedAt // each taken once
}

// listedAt is what the LIST says of an At: its incarnation and version.
type listedAt struct {
	uid             types.UID
	resourceVersion string
}

// Confirm returns the At of cached's name as the API server holds it after
// due (its status.scheduledTime): cached itself if the instant's LIST shows
// it unchanged, else what get, the At's own read, returns.
func (c *DueReads) Confirm(ctx context.Context, reader client.Reader, cached *cnatv1beta1.At, due, now time.Time, get func() (*cnatv1beta1.At, error)) (*cnatv1beta1.At, error) {
	key := dueInstant{namespace: cached.Namespace, due: due.UTC()}
	list, overlapped := c.begin(key, now)
	defer c.end(key)
	if list == nil && overlapped {
		listed := c.flight.DoChan(key.String(), func() (any, error) {
			if list := c.listed(key); list != nil {
				return list, nil // made while this one was being asked for
			}
			list := readDue(ctx, reader, key, now)
			c.keep(key, list)
			return list, nil
		})
		select {
		case r := <-listed:
			list = r.Val.(*dueList)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if list != nil && list.take(cached) {
		return cached, nil
	}
	return get()
}

// begin registers a confirmation of the instant and returns its LIST, if one
// returned, and whether another confirmation of it is under way.
func (c *DueReads) begin(key dueInstant, now time.Time) (list *dueList, overlapped bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.instants == nil {
		c.instants = map[dueInstant]*dueConfirmations{}
	}
	for k, in := range c.instants {
		if in.busy == 0 && in.list != nil && now.Sub(in.list.started) > keepDueList {
			delete(c.instants, k)
		}
	}
	in := c.instants[key]
	if in == nil {
		in = &dueConfirmations{}
		c.instants[key] = in
	}
	in.busy++
	return in.list, in.busy > 1
}

// listed is the instant's LIST, if one returned.
func (c *DueReads) listed(key dueInstant) *dueList {
	c.mu.Lock()
	defer c.mu.Unlock()
	if in := c.instants[key]; in != nil {
		return in.list
	}
	return nil
}

// keep records the instant's LIST for the rest of its burst.
func (c *DueReads) keep(key dueInstant, list *dueList) {
	c.mu.Lock()
	defer c.mu.Unlock()
	in := c.instants[key]
	if in == nil {
		in = &dueConfirmations{}
		c.instants[key] = in
	}
	in.list = list
}

// end unregisters a confirmation; an instant with a LIST stays for
// keepDueList, or until its last listed At is taken.
func (c *DueReads) end(key dueInstant) {
	c.mu.Lock()
	defer c.mu.Unlock()
	in := c.instants[key]
	if in == nil {
		return
	}
	if in.busy--; in.busy == 0 && (in.list == nil || in.list.drained()) {
		delete(c.instants, key)
	}
}

// readDue lists the metadata of the namespace's Ats due at the instant.
func readDue(ctx context.Context, reader client.Reader, key dueInstant, now time.Time) *dueList {
	l := &dueList{started: now}
	ats, err := listDue(ctx, reader, key.due, client.InNamespace(key.namespace))
	if err != nil {
		l.err = fmt.Errorf("listing the Ats due at %s: %w", key.due.Format(time.RFC3339), err)
		ctrl.LoggerFrom(ctx).V(1).Info("Confirming each start with its own read", "reason", l.err.Error())
		return l
	}
	l.ats = make(map[types.NamespacedName]listedAt, len(ats.Items))
	for _, at := range ats.Items {
		l.ats[types.NamespacedName{Namespace: at.Namespace, Name: at.Name}] = listedAt{uid: at.UID, resourceVersion: at.ResourceVersion}
	}
	return l
}

// drained says whether every At the LIST listed was taken. A failed LIST is
// kept too, so an API server that refuses it is not asked again in the burst.
func (l *dueList) drained() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err == nil && len(l.ats) == 0
}

// take says whether the LIST returned cached's At in the very version the
// cache shows, and forgets it: a second look at it reads afresh.
func (l *dueList) take(cached *cnatv1beta1.At) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return false
	}
	key := client.ObjectKeyFromObject(cached)
	at, ok := l.ats[key]
	delete(l.ats, key)
	return ok && at.uid == cached.UID && at.resourceVersion == cached.ResourceVersion
}

// listDue lists the metadata of the Ats whose status.scheduledTime (a
// selectable field) is due, in the namespace opts name or in every one.
func listDue(ctx context.Context, reader client.Reader, due time.Time, opts ...client.ListOption) (*metav1.PartialObjectMetadataList, error) {
	return listAtMetadata(ctx, reader, append(opts, client.MatchingFields{cnatv1beta1.FieldScheduledTime: due.UTC().Format(time.RFC3339)})...)
}

// listAtMetadata lists the metadata of the Ats opts select.
func listAtMetadata(ctx context.Context, reader client.Reader, opts ...client.ListOption) (*metav1.PartialObjectMetadataList, error) {
	ats := &metav1.PartialObjectMetadataList{}
	ats.SetGroupVersionKind(cnatv1beta1.GroupVersion.WithKind("AtList"))
	return ats, reader.List(ctx, ats, opts...)
}
