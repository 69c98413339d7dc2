package main

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/programming-kubernetes/cnat/hack/internal/cluster"
	"github.com/programming-kubernetes/cnat/hack/internal/judge"
)

// jobLeadFor is how far ahead the job stage's T is: enough to create n
// suspended Jobs and for the Job controller to mark each suspended.
func (o options) jobLeadFor(n int) time.Duration {
	if o.lead > 0 {
		return o.lead
	}
	return 10*time.Second + time.Duration(n)*10*time.Millisecond
}

// runJob measures what a user would otherwise run: N suspended Jobs
// (backoffLimit 0, one Pod of the raw stage's spec each) created ahead of T
// and unsuspended at T by the bench's client at -concurrency, as a queueing
// controller such as kueue starts work; kube-controller-manager's Job
// controller then creates and follows their Pods. The unsuspending patches
// count among the writes per unit: a Job is started at its time only by
// someone writing it then.
func (b *bench) runJob(ctx context.Context) (*Stage, error) {
	ns, rec, _, stopWatch, err := b.watchedNamespace(ctx, "job", kindPod, kindJob)
	if err != nil {
		return nil, err
	}
	defer stopWatch()
	stage := &Stage{Name: "job", Title: fmt.Sprintf("Job controller: suspended Jobs unsuspended at T, concurrency %d", b.opts.concurrency), N: b.opts.n}
	m, err := b.startMeter(ctx, stage)
	if err != nil {
		return nil, err
	}
	stage.T = time.Now().Add(b.opts.jobLeadFor(b.opts.n)).Truncate(time.Second).Add(time.Second)
	fmt.Printf("bench: job: creating %d suspended Jobs, to unsuspend at %s (%s ahead)\n", b.opts.n, stage.T.Format(time.TimeOnly), time.Until(stage.T).Round(time.Second))
	uids := make([]types.UID, b.opts.n)
	start := time.Now()
	err = cluster.ForEach(ctx, b.opts.n, b.opts.concurrency, func(ctx context.Context, i int) error {
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%06d", i)},
			Spec: batchv1.JobSpec{
				Suspend:      ptr.To(true),
				BackoffLimit: ptr.To[int32](0),
				Template:     corev1.PodTemplateSpec{Spec: simulatedPodSpec()},
			},
		}
		created, err := b.c.Kube.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating Job %s/%s: %w", ns, job.Name, err)
		}
		uids[i] = created.UID
		return nil
	})
	if err != nil {
		return nil, err
	}
	stage.CreationSeconds = time.Since(start).Seconds()
	if time.Now().After(stage.T) {
		return nil, fmt.Errorf("creating %d Jobs took %.1fs, longer than the lead: raise -lead", b.opts.n, stage.CreationSeconds)
	}
	if err := m.readAtT(ctx, stage.T); err != nil {
		return nil, err
	}
	unsuspend := []byte(`{"spec":{"suspend":false}}`)
	err = cluster.ForEach(ctx, b.opts.n, b.opts.concurrency, func(ctx context.Context, i int) error {
		name := fmt.Sprintf("bench-%06d", i)
		if _, err := b.c.Kube.BatchV1().Jobs(ns).Patch(ctx, name, types.MergePatchType, unsuspend, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("unsuspending Job %s/%s: %w", ns, name, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	fmt.Printf("bench: job: unsuspended in %.1fs\n", time.Since(stage.T).Seconds())
	stage.AllTerminal = rec.waitTerminal(ctx, kindJob, b.opts.n, stage.T.Add(b.opts.timeout))
	err = b.finishMeter(ctx, m, stage, ns, controllerWrites{match: isBatchWrite, benchBeforeT: float64(b.opts.n), reporters: []string{"job-controller"}})
	if err != nil {
		return nil, err
	}

	jobs := rec.snapshot(kindJob)
	pods := rec.snapshot(kindPod)
	first, count := firstByOwner(pods)
	var lateness []time.Duration
	outcomes := make([]judge.Outcome, len(uids))
	for i, uid := range uids {
		job := jobs[uid]
		outcomes[i] = judge.Outcome{Name: fmt.Sprintf("bench-%06d", i), Allowed: 1, Runs: count[uid], Terminal: !job.terminal.IsZero()}
		if f, ok := first[uid]; ok {
			lateness = append(lateness, f.received.Sub(stage.T))
		}
		stage.AllTerminalSeconds = max(stage.AllTerminalSeconds, job.terminal.Sub(stage.T).Seconds())
	}
	stage.finish(lateness, outcomes, watchLag(pods))
	return stage, nil
}
