package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/hack/internal/cluster"
	"github.com/programming-kubernetes/cnat/hack/internal/poll"
)

// MemoryReading is the controller's memory in one situation, read once it
// had caught up (idle for three seconds) after a fresh start.
type MemoryReading struct {
	Situation string `json:"situation"`
	// RSSBytes is the resident set size once idle; PeakRSSBytes its peak
	// since the controller started (VmHWM).
	RSSBytes     int64 `json:"rssBytes"`
	PeakRSSBytes int64 `json:"peakRSSBytes"`
	// SettleSeconds is how long the controller took to become idle.
	SettleSeconds float64 `json:"settleSeconds"`
	// CreationSeconds is how long creating the objects took, if the bench
	// created them for this reading.
	CreationSeconds float64 `json:"creationSeconds,omitempty"`
	// PendingAts is the number of pending Ats of a -memory-pending reading,
	// Controller which controller it read ("this build", or "before": the
	// -memory-before-controller binary).
	PendingAts int    `json:"pendingAts,omitempty"`
	Controller string `json:"controller,omitempty"`
	// ListedSeconds is how long after its start the controller had listed
	// every At: its log says "Listed every At" (a controller from before
	// the store of Ats says when its workers started, which waited for the
	// list).
	ListedSeconds float64 `json:"listedSeconds,omitempty"`
	// CanaryLatenessSeconds is how late the Pod of an At due CanaryDueSeconds
	// after the restart appeared, at the largest -memory-pending step.
	CanaryLatenessSeconds *float64 `json:"canaryLatenessSeconds,omitempty"`
	CanaryDueSeconds      float64  `json:"canaryDueSeconds,omitempty"`
}

// canaryDue is how long after the last restart of -memory-pending its
// canary At is due: sooner than a restart beside 100 000 Ats lists them
// all (21–44 s on this machine), so that it is due while the controller
// still lists, named to come last in the list.
const canaryDue = 10 * time.Second

// Controllers a memory reading names.
const (
	thisBuild = "this build"
	before    = "before"
)

// restartController stops the controller and starts a fresh one, from the
// binary bin (empty: bin/cnat-controller), so a reading is not inflated by
// what an earlier stage left on its heap.
func (b *bench) restartController(ctx context.Context, bin string) error {
	b.controller.Stop()
	p, err := startController(ctx, b.root, b.opts.kubeconfig, b.controller.Log, bin, b.opts.controllerArgs)
	if err != nil {
		return err
	}
	b.controller = p
	return nil
}

// readMemory waits until the controller is idle and reads its memory.
func (b *bench) readMemory(ctx context.Context, situation string) (MemoryReading, error) {
	settle, err := b.controller.WaitIdle(ctx, 5*time.Minute)
	if err != nil {
		return MemoryReading{}, err
	}
	rss, hwm, err := b.controller.Memory()
	if err != nil {
		return MemoryReading{}, err
	}
	r := MemoryReading{Situation: situation, RSSBytes: rss, PeakRSSBytes: hwm, SettleSeconds: settle.Seconds()}
	fmt.Printf("bench: memory: %s: RSS %s (peak %s), idle after %.1fs\n", situation, mib(rss), mib(hwm), r.SettleSeconds)
	return r, nil
}

// memorySteps are the numbers of pending Ats the memory is read at: a
// 1-2-5 series from 1 000 below count, and count.
func memorySteps(count int) []int {
	var steps []int
	for decade := 1000; decade < count; decade *= 10 {
		for _, m := range []int{1, 2, 5} {
			if step := m * decade; step < count {
				steps = append(steps, step)
			}
		}
	}
	return append(steps, count)
}

// memoryPending creates count pending Ats, due in a day, in batches, and at
// each step of memorySteps restarts the controller — the -memory-before
// one too, if given, on the same Ats — and reads how long it took to list
// every At, its peak RSS (the initial list) and its RSS once idle. Before the last step's restart of this build, an At
// due canaryDue later is created: how late its Pod comes.
func (b *bench) memoryPending(ctx context.Context, count int) ([]MemoryReading, error) {
	ns := b.opts.namespacePrefix + "-pending"
	if err := createNamespace(ctx, b.c, ns); err != nil {
		return nil, err
	}
	due := time.Now().Add(24 * time.Hour).Truncate(time.Second)
	start := time.Now()
	var readings []MemoryReading
	made := 0
	for _, step := range memorySteps(count) {
		for made < step {
			size := min(b.opts.memoryBatch, step-made)
			if _, err := b.createAts(ctx, ns, fmt.Sprintf("pending-%03d", made/b.opts.memoryBatch), size, due); err != nil {
				return readings, err
			}
			made += size
			fmt.Printf("bench: memory: %d of %d pending Ats created (%.0fs)\n", made, count, time.Since(start).Seconds())
		}
		// The controller that created them must have written their status:
		// a restart then lists Ats as a restart in production does.
		if _, err := b.controller.WaitIdle(ctx, 10*time.Minute); err != nil {
			return readings, err
		}
		controllers := []string{thisBuild}
		if b.opts.memoryBefore != "" {
			controllers = []string{before, thisBuild}
		}
		for _, which := range controllers {
			var canary *canaryAt
			if which == thisBuild && step == count {
				c, err := b.createCanary(ctx, ns, canaryDue)
				if err != nil {
					return readings, err
				}
				canary = c
			}
			r, err := b.readRestart(ctx, which, step, canary)
			if err != nil {
				return readings, err
			}
			readings = append(readings, r)
		}
	}
	return readings, cleanNamespace(ctx, b.c, ns)
}

// readRestart restarts the controller (which: this build or the one
// before) beside pending Ats and reads it.
func (b *bench) readRestart(ctx context.Context, which string, pending int, canary *canaryAt) (MemoryReading, error) {
	bin := ""
	if which == before {
		bin = b.opts.memoryBefore
	}
	started := time.Now()
	// The canary is watched for from the restart on, beside the wait for
	// the list: its Pod may come before the list is done.
	var (
		late      float64
		canaryErr error
		watching  sync.WaitGroup
	)
	if canary != nil {
		watching.Go(func() { late, canaryErr = canary.wait(ctx, b.c, 5*time.Minute) })
	}
	if err := b.restartController(ctx, bin); err != nil {
		return MemoryReading{}, err
	}
	listedLine := []string{"Listed every At"}
	if which == before {
		listedLine = []string{"Starting workers", `"controller":"at"`}
	}
	listed, err := b.controller.WaitLogged(ctx, 10*time.Minute, listedLine...)
	if err != nil {
		return MemoryReading{}, err
	}
	var lateness *float64
	if canary != nil {
		watching.Wait()
		if canaryErr != nil {
			return MemoryReading{}, canaryErr
		}
		lateness = &late
	}
	r, err := b.readMemory(ctx, fmt.Sprintf("%d pending Ats (%s)", pending, which))
	if err != nil {
		return MemoryReading{}, err
	}
	r.PendingAts, r.Controller, r.CanaryLatenessSeconds = pending, which, lateness
	if lateness != nil {
		r.CanaryDueSeconds = canaryDue.Seconds()
	}
	r.ListedSeconds = listed.Sub(started).Seconds()
	fmt.Printf("bench: memory: %s: every At listed %.1fs after the start\n", r.Situation, r.ListedSeconds)
	if lateness != nil {
		fmt.Printf("bench: memory: the At due %s after the restart had its Pod %.2fs after its time\n", canaryDue, *lateness)
	}
	return r, nil
}

// canaryAt is an At due right after a restart.
type canaryAt struct {
	namespace, name string
	due             time.Time
}

func (b *bench) createCanary(ctx context.Context, ns string, in time.Duration) (*canaryAt, error) {
	due := time.Now().Add(in).Truncate(time.Second)
	// Named to sort after every other At: the API server lists in key
	// order, so it is the last At a restarted controller sees.
	if _, err := b.createAts(ctx, ns, "zz-canary", 1, due); err != nil {
		return nil, err
	}
	return &canaryAt{namespace: ns, name: "zz-canary-000000", due: due}, nil
}

// wait returns how long after its time the canary's Pod appeared, polled
// every 100 ms.
func (c *canaryAt) wait(ctx context.Context, cs *cluster.Clients, timeout time.Duration) (late float64, err error) {
	appeared := func(ctx context.Context) (bool, error) {
		pods, err := cs.Kube.CoreV1().Pods(c.namespace).List(ctx, metav1.ListOptions{LabelSelector: cnatv1beta1.LabelAt + "=" + c.name})
		late = time.Since(c.due).Seconds()
		return err == nil && len(pods.Items) > 0, err
	}
	err = poll.Until(ctx, 100*time.Millisecond, timeout, appeared, func() error {
		return fmt.Errorf("the At %s due at %s had no Pod %s later", c.name, c.due.Format(time.RFC3339), timeout)
	})
	return late, err
}

// memoryUnrelatedPods reads the controller's memory before and after count
// Pods that are not cnat's appear in the cluster: its Pod cache selects
// cnat's label, so it must not grow with them.
func (b *bench) memoryUnrelatedPods(ctx context.Context, count int) ([]MemoryReading, error) {
	ns := b.opts.namespacePrefix + "-unrelated"
	if err := createNamespace(ctx, b.c, ns); err != nil {
		return nil, err
	}
	if err := b.restartController(ctx, ""); err != nil {
		return nil, err
	}
	without, err := b.readMemory(ctx, fmt.Sprintf("before %d unrelated Pods", count))
	if err != nil {
		return nil, err
	}
	start := time.Now()
	err = cluster.ForEach(ctx, count, b.opts.concurrency, func(ctx context.Context, i int) error {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("unrelated-%06d", i)}, Spec: simulatedPodSpec()}
		_, err := b.c.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("creating unrelated Pods: %w", err)
	}
	created := time.Since(start).Seconds()
	with, err := b.readMemory(ctx, fmt.Sprintf("with %d unrelated Pods", count))
	if err != nil {
		return nil, err
	}
	with.CreationSeconds = created
	return []MemoryReading{without, with}, cleanNamespace(ctx, b.c, ns)
}

func mib(bytes int64) string {
	return fmt.Sprintf("%.0f MiB", float64(bytes)/(1<<20))
}
