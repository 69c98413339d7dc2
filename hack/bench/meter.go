package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/client-go/kubernetes"
)

// meter reads the API server's /metrics when a stage begins, at its T when
// the units were created before it, and when the stage ends: what the API
// server did over the units' whole life, and over the part after T that
// decides how soon all are terminal.
type meter struct {
	cs    kubernetes.Interface
	start apiserverReading
	atT   *apiserverReading
}

// startMeter reads the API server as a stage begins.
func startMeter(ctx context.Context, cs kubernetes.Interface) (*meter, error) {
	r, err := readAPIServer(ctx, cs)
	if err != nil {
		return nil, err
	}
	return &meter{cs: cs, start: r}, nil
}

// readAtT waits until t and reads the API server. The bench's watches keep
// recording meanwhile.
func (m *meter) readAtT(ctx context.Context, t time.Time) error {
	select {
	case <-time.After(time.Until(t)):
	case <-ctx.Done():
		return ctx.Err()
	}
	r, err := readAPIServer(ctx, m.cs)
	if err != nil {
		return err
	}
	m.atT = &r
	return nil
}

// controllerWrites says which writes of a stage are those of the way of
// starting Pods under test: the requests match accepts, less the
// bench's own creates before T (benchBeforeT), and the Events that the
// reporters emitted.
type controllerWrites struct {
	match        func(RequestKey) bool
	benchBeforeT float64
	reporters    []string
}

// finish reads the API server as the stage ends and accounts for the
// stage. events are the Events of the stage's namespace.
func (m *meter) finish(ctx context.Context, s *Stage, w controllerWrites, events []EventCount) error {
	end, err := readAPIServer(ctx, m.cs)
	if err != nil {
		return err
	}
	return account(s, m.start, m.atT, end, w, events)
}

// account fills in a stage's requests, the API server's CPU and the writes
// per unit, over the whole stage (start to end) and after T (atT to end;
// nil when T is when the stage's creation began).
func account(s *Stage, start apiserverReading, atT *apiserverReading, end apiserverReading, w controllerWrites, events []EventCount) error {
	life := end.since(start)
	s.Requests = life.Requests
	s.APIServerCPUSeconds = life.CPUSeconds
	s.Events = events
	n := float64(s.N)
	var eventsLife, eventsAfterT int
	for _, e := range events {
		if slices.Contains(w.reporters, e.Reporter) {
			eventsLife += e.Count
			eventsAfterT += e.AfterT
		}
	}
	writes := sumRequests(life.Requests, w.match) - w.benchBeforeT
	if writes < 0 {
		return fmt.Errorf("stage %s: fewer writes than the bench's own %.0f creates: the API server's request counter went back (a restart?)", s.Name, w.benchBeforeT)
	}
	s.WritesPerUnit = (writes + float64(eventsLife)) / n
	s.WritesPerUnitAfterT = s.WritesPerUnit
	if atT != nil {
		afterT := end.since(*atT)
		s.AfterT = &afterT
		s.WritesPerUnitAfterT = (sumRequests(afterT.Requests, w.match) + float64(eventsAfterT)) / n
	}
	return nil
}
