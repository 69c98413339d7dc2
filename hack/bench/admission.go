package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/programming-kubernetes/cnat/hack/internal/cluster"
)

// Admission is one reading of the admission stage: how fast the API server
// takes N objects of a kind from the bench's unthrottled client at its
// concurrency.
type Admission struct {
	Kind    string  `json:"kind"`
	N       int     `json:"n"`
	Seconds float64 `json:"seconds"`
	// Round is which of the run's repetitions it belongs to, from 1.
	Round int `json:"round"`
}

// PerSecond is the creation rate.
func (a Admission) PerSecond() float64 {
	if a.Seconds <= 0 {
		return 0
	}
	return float64(a.N) / a.Seconds
}

// The kinds of the admission stage: a ConfigMap is the limit for an object
// without webhooks (a custom resource with a schema is close to it), a Pod
// passes the API server's own admission chain, an At passes cnat's webhooks
// (the defaulter, the validator's SubjectAccessReview and dry-run Pod) and
// is then written once by the controller (its Pending status), which the
// API server does beside the creates that follow.
const (
	admissionConfigMap = "ConfigMap"
	admissionPod       = "Pod"
	admissionAt        = "At"
)

// admissionGate holds the admission stage's Pods back from the scheduler:
// the stage times their creation only, and a Pod that was scheduled would
// go on costing the API server a binding and kwok's two status writes
// while the Ats after it are created, which would count against the Ats.
const admissionGate = "cnat.programming-kubernetes.info/bench-admission"

// runAdmission creates N ConfigMaps, N Pods (held by a scheduling gate) and
// N Ats (due in a day, so they stay pending) in a namespace of their own,
// each kind as fast as the bench's client can at its concurrency, and
// times each kind.
func (b *bench) runAdmission(ctx context.Context) ([]Admission, error) {
	ns := b.opts.namespacePrefix + "-" + stageNamespace("admission")
	if err := createNamespace(ctx, b.c, ns); err != nil {
		return nil, err
	}
	n, concurrency := b.opts.n, b.opts.concurrency
	each := func(create func(ctx context.Context, i int) error) func() error {
		return func() error { return cluster.ForEach(ctx, n, concurrency, create) }
	}
	var out []Admission
	for _, kind := range []struct {
		name   string
		create func() error
	}{
		{admissionConfigMap, each(func(ctx context.Context, i int) error {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("admission-%06d", i)}, Data: map[string]string{"command": "echo admitted"}}
			if _, err := b.c.Kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating ConfigMap %s/%s: %w", ns, cm.Name, err)
			}
			return nil
		})},
		{admissionPod, each(func(ctx context.Context, i int) error {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("admission-%06d", i)}, Spec: simulatedPodSpec()}
			pod.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: admissionGate}}
			if _, err := b.c.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating Pod %s/%s: %w", ns, pod.Name, err)
			}
			return nil
		})},
		{admissionAt, func() error {
			_, err := b.createAts(ctx, ns, "admission", n, time.Now().Add(24*time.Hour).Truncate(time.Second))
			return err
		}},
	} {
		start := time.Now()
		if err := kind.create(); err != nil {
			return nil, err
		}
		a := Admission{Kind: kind.name, N: n, Seconds: time.Since(start).Seconds()}
		fmt.Printf("bench: admission: %d %ss in %s, %.0f/s\n", n, kind.name, fmtSeconds(a.Seconds), a.PerSecond())
		out = append(out, a)
	}
	return out, nil
}
