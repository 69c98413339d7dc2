package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// EventCount is how many Events of one reason one component emitted in a
// stage's namespace. Each Event is counted once (a repeated Event that a
// recorder folded into a series is still one object, written more than
// once).
type EventCount struct {
	Reporter string `json:"reporter"`
	Reason   string `json:"reason"`
	Count    int    `json:"count"`
	// AfterT are those emitted at or after T.
	AfterT int `json:"afterT"`
}

// countEvents counts the Events of namespace by reporting component and
// reason, and those of them emitted at or after t. An Event written through
// the core/v1 API names its component in its source.
func countEvents(ctx context.Context, cs kubernetes.Interface, namespace string, t time.Time) ([]EventCount, error) {
	counts := map[[2]string]*EventCount{}
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := cs.EventsV1().Events(namespace).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("listing the Events of %s: %w", namespace, err)
		}
		for _, e := range list.Items {
			reporter := cmp.Or(e.ReportingController, e.DeprecatedSource.Component, "unknown")
			key := [2]string{reporter, e.Reason}
			c := counts[key]
			if c == nil {
				c = &EventCount{Reporter: reporter, Reason: e.Reason}
				counts[key] = c
			}
			c.Count++
			if !emitted(&e).Before(t.Truncate(time.Second)) {
				c.AfterT++
			}
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	out := make([]EventCount, 0, len(counts))
	for _, c := range counts {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b EventCount) int {
		return cmp.Or(cmp.Compare(a.Reporter, b.Reporter), cmp.Compare(a.Reason, b.Reason))
	})
	return out, nil
}

// emitted is when an Event was first emitted: its eventTime (microseconds)
// where the recorder set one, else its first timestamp or its creation
// (whole seconds).
func emitted(e *eventsv1.Event) time.Time {
	switch {
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.DeprecatedFirstTimestamp.IsZero():
		return e.DeprecatedFirstTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

// storedEvents is how many Events the API server holds in all namespaces:
// read when each stage begins, it shows whether the Events of earlier stages
// pile up between pairs (each stage removes its own, removeEvents).
func storedEvents(ctx context.Context, cs kubernetes.Interface) (int, error) {
	list, err := cs.EventsV1().Events("").List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return 0, fmt.Errorf("counting the stored Events: %w", err)
	}
	n := len(list.Items)
	if list.RemainingItemCount != nil {
		n += int(*list.RemainingItemCount)
	}
	return n, nil
}

// removeEvents deletes the Events of a stage's namespace and waits until
// they are gone, so that the next stage starts with as few stored Events as
// this one did, not behind the namespace controller's cleanup.
func removeEvents(ctx context.Context, cs kubernetes.Interface, namespace string) error {
	events := cs.CoreV1().Events(namespace)
	if err := events.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return fmt.Errorf("deleting the Events of %s: %w", namespace, err)
	}
	return waitEmpty(ctx, func(ctx context.Context) (int, error) {
		l, err := events.List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return 0, err
		}
		return len(l.Items), nil
	}, time.Minute)
}
