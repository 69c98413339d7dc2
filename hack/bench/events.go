package main

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
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
	return countStored(ctx, cs, "")
}

// countStored counts the Events of a namespace (all: "") from a list of
// one, by the remaining count the API server gives with it.
func countStored(ctx context.Context, cs kubernetes.Interface, namespace string) (int, error) {
	list, err := cs.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return 0, fmt.Errorf("counting the stored Events: %w", err)
	}
	n := len(list.Items)
	if list.RemainingItemCount != nil {
		n += int(*list.RemainingItemCount)
	}
	return n, nil
}

// removeEvents deletes the Events of a stage's namespace and waits, for at
// most 30 s, until none is left, so that the next stage starts with as few
// stored Events as this one did, not behind the namespace controller's
// cleanup. A recorder still sending its backlog (the Job controller's) may
// outlast that: the namespace's deletion then refuses and removes the rest,
// and the count of stored Events at the next stage's start shows it.
func removeEvents(ctx context.Context, cs kubernetes.Interface, namespace string) error {
	events := cs.CoreV1().Events(namespace)
	if err := events.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return fmt.Errorf("deleting the Events of %s: %w", namespace, err)
	}
	err := waitEmpty(ctx, func(ctx context.Context) (int, error) { return countStored(ctx, cs, namespace) }, 30*time.Second)
	if err != nil && ctx.Err() == nil {
		fmt.Printf("bench: Events still arriving in %s after 30s; left to the namespace's deletion\n", namespace)
		return nil
	}
	return err
}

// settleEvents waits until the number of Events in namespace has not
// changed for three seconds, for at most settleTimeout, and returns how long
// it waited and whether they settled: a recorder sends its Events one at a
// time behind the writes they announce (client-go's, which
// kube-controller-manager's Job controller uses, from one goroutine, and
// with a queue of 1 000 that drops the rest), and a unit's life is not over
// until they are written.
func settleEvents(ctx context.Context, cs kubernetes.Interface, namespace string) (time.Duration, bool, error) {
	start := time.Now()
	last, stable := -1, 0
	err := wait.PollUntilContextTimeout(ctx, time.Second, settleTimeout, true, func(ctx context.Context) (bool, error) {
		n, err := countStored(ctx, cs, namespace)
		if err != nil {
			return false, err
		}
		if n == last {
			stable++
		} else {
			last, stable = n, 0
		}
		return stable >= 3, nil
	})
	if err != nil && ctx.Err() == nil && !wait.Interrupted(err) {
		return time.Since(start), false, fmt.Errorf("waiting for the Events of %s to settle: %w", namespace, err)
	}
	return time.Since(start), err == nil, ctx.Err()
}

// settleTimeout is how long settleEvents waits at most.
const settleTimeout = 2 * time.Minute
