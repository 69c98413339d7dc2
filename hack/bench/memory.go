package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
}

// restartController stops the controller and starts a fresh one, so a
// reading is not inflated by what an earlier stage left on its heap.
func (b *bench) restartController(ctx context.Context) error {
	b.controller.stop()
	p, err := startController(ctx, b.root, b.opts.kubeconfig, b.controller.log, b.opts.controllerArgs)
	if err != nil {
		return err
	}
	b.controller = p
	return nil
}

// readMemory waits until the controller is idle and reads its memory.
func (b *bench) readMemory(ctx context.Context, situation string) (MemoryReading, error) {
	settle, err := b.controller.waitIdle(ctx, 5*time.Minute)
	if err != nil {
		return MemoryReading{}, err
	}
	rss, hwm, err := b.controller.memory()
	if err != nil {
		return MemoryReading{}, err
	}
	r := MemoryReading{Situation: situation, RSSBytes: rss, PeakRSSBytes: hwm, SettleSeconds: settle.Seconds()}
	fmt.Printf("bench: memory: %s: RSS %s (peak %s), idle after %.1fs\n", situation, mib(rss), mib(hwm), r.SettleSeconds)
	return r, nil
}

// memoryPending reads the controller's memory with count pending Ats, due
// in a day, created in batches.
func (b *bench) memoryPending(ctx context.Context, count int) (MemoryReading, error) {
	ns := b.opts.namespacePrefix + "-pending"
	if err := createNamespace(ctx, b.c.kube, ns); err != nil {
		return MemoryReading{}, err
	}
	if err := b.restartController(ctx); err != nil {
		return MemoryReading{}, err
	}
	due := time.Now().Add(24 * time.Hour).Truncate(time.Second)
	start := time.Now()
	for done := 0; done < count; done += b.opts.memoryBatch {
		size := min(b.opts.memoryBatch, count-done)
		if _, err := b.createAts(ctx, ns, fmt.Sprintf("pending-%03d", done/b.opts.memoryBatch), size, due); err != nil {
			return MemoryReading{}, err
		}
		fmt.Printf("bench: memory: %d of %d pending Ats created (%.0fs)\n", done+size, count, time.Since(start).Seconds())
	}
	created := time.Since(start).Seconds()
	r, err := b.readMemory(ctx, fmt.Sprintf("%d pending Ats", count))
	if err != nil {
		return MemoryReading{}, err
	}
	r.CreationSeconds = created
	return r, cleanNamespace(ctx, b.c, ns)
}

// memoryUnrelatedPods reads the controller's memory before and after count
// Pods that are not cnat's appear in the cluster: its Pod cache selects
// cnat's label, so it must not grow with them.
func (b *bench) memoryUnrelatedPods(ctx context.Context, count int) ([]MemoryReading, error) {
	ns := b.opts.namespacePrefix + "-unrelated"
	if err := createNamespace(ctx, b.c.kube, ns); err != nil {
		return nil, err
	}
	if err := b.restartController(ctx); err != nil {
		return nil, err
	}
	without, err := b.readMemory(ctx, fmt.Sprintf("before %d unrelated Pods", count))
	if err != nil {
		return nil, err
	}
	start := time.Now()
	err = forEach(ctx, count, b.opts.concurrency, func(ctx context.Context, i int) error {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("unrelated-%06d", i)}, Spec: simulatedPodSpec()}
		_, err := b.c.kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
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
