package lifecycle_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/atpod"
	"github.com/programming-kubernetes/cnat/internal/lifecycle"
)

var t0 = time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)

const (
	uid    = types.UID("7f3c1a52-0d4e-4b8e-9a43-2c1f5e6d7a80")
	oldUID = types.UID("0b9d4e11-5a6f-4c3e-8d2b-1e0f9a8b7c6d")
)

// newAt is an At due at t0, changed by edits.
func newAt(edits ...func(*cnatv1beta1.At)) *cnatv1beta1.At {
	at := &cnatv1beta1.At{
		ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "ns", UID: uid, Generation: 1},
		Spec:       cnatv1beta1.AtSpec{Schedule: t0.Format(time.RFC3339), Command: "echo hi"},
	}
	for _, edit := range edits {
		edit(at)
	}
	return at
}

func backoffLimit(n int32) func(*cnatv1beta1.At) {
	return func(at *cnatv1beta1.At) { at.Spec.BackoffLimit = ptr.To(n) }
}

func recorded(phase cnatv1beta1.Phase, attempts int32) func(*cnatv1beta1.At) {
	return func(at *cnatv1beta1.At) { at.Status.Phase, at.Status.Attempts = phase, attempts }
}

// podOf is the Pod cnat creates for attempt of at, created at created,
// changed by edits.
func podOf(g Gomega, at *cnatv1beta1.At, attempt int32, created time.Time, edits ...func(*corev1.Pod)) corev1.Pod {
	pod := atpod.NewPod(at, attempt, t0, atpod.PodOptions{DefaultImage: "busybox"})
	pod.CreationTimestamp = metav1.NewTime(created)
	for _, edit := range edits {
		edit(pod)
	}
	return *pod
}

func exited(code int32, at time.Time) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		phase := corev1.PodSucceeded
		if code != 0 {
			phase = corev1.PodFailed
		}
		p.Status = corev1.PodStatus{Phase: phase, Conditions: p.Status.Conditions, ContainerStatuses: []corev1.ContainerStatus{{
			Name:  p.Spec.Containers[0].Name,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, FinishedAt: metav1.NewTime(at)}},
		}}}
	}
}

func running(p *corev1.Pod) {
	p.Spec.NodeName = "node"
	p.Status.Phase = corev1.PodRunning
}

// exitedOnNode is exited with the Pod on a node, whose clock may be off.
func exitedOnNode(code int32, at time.Time) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		exited(code, at)(p)
		p.Spec.NodeName = "node"
		p.Status.ContainerStatuses[0].State.Terminated.StartedAt = metav1.NewTime(at.Add(-time.Second))
	}
}

// disrupted adds the DisruptionTarget condition with reason.
func disrupted(reason string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: reason})
	}
}

// stoppedBeforeItRan is the kubelet's last word on a Pod it stopped before
// it acknowledged it (no startTime) and before any container started.
func stoppedBeforeItRan(p *corev1.Pod) {
	p.Spec.NodeName = "node"
	p.Status.Phase = corev1.PodFailed
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name:  p.Spec.Containers[0].Name,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "ContainerStatusUnknown"}},
	}}
}

func retryRecorded(at time.Time) func(*cnatv1beta1.At) {
	return func(a *cnatv1beta1.At) { a.Status.RetryTime = ptr.To(metav1.NewTime(at)) }
}

func unstartedRecorded(n int32) func(*cnatv1beta1.At) {
	return func(a *cnatv1beta1.At) { a.Status.UnstartedAttempts = n }
}

// deletedAt deletes the Pod at the time as the API server would: at once
// (grace period 0) when it is finished, else with 30 seconds of grace.
func deletedAt(at time.Time) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		grace := int64(30)
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			grace = 0
		}
		p.DeletionTimestamp = ptr.To(metav1.NewTime(at.Add(time.Duration(grace) * time.Second)))
		p.DeletionGracePeriodSeconds = ptr.To(grace)
	}
}

func released(p *corev1.Pod) { p.Finalizers = nil }

// deletedAgainByKubelet is the kubelet's last word on a Pod deleted with a
// grace period: once it stopped, it deletes it again with a grace period of
// 0, and the API server stores 0.
func deletedAgainByKubelet(p *corev1.Pod) {
	// The API server moves the deletion timestamp back by the grace period
	// it cuts: to when the deletion was asked for.
	grace := time.Duration(ptr.Deref(p.DeletionGracePeriodSeconds, 0)) * time.Second
	p.DeletionTimestamp = ptr.To(metav1.NewTime(p.DeletionTimestamp.Add(-grace)))
	p.DeletionGracePeriodSeconds = ptr.To[int64](0)
}

// reportedAt sets the Pod's generation and the one its kubelet's last
// report observed (status.observedGeneration).
func reportedAt(generation, observed int64) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Generation, p.Status.ObservedGeneration = generation, observed }
}

// seenDeleting is the controller's watch having shown the Pod deleted before
// it finished.
func seenDeleting(p *corev1.Pod) { lifecycle.MarkSeen(p, true, false) }

// seenFinishing marks a Pod as the controller's watch saw it finish before
// any deletion.
func seenFinishing(p *corev1.Pod) { lifecycle.MarkSeen(p, false, true) }

// restarted sets the command container's restartCount.
func restarted(n int32) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Status.ContainerStatuses[0].RestartCount = n }
}

func stoppingRecorded(podName string) func(*cnatv1beta1.At) {
	return func(a *cnatv1beta1.At) { a.Status.Reason, a.Status.PodName = cnatv1beta1.ReasonPodStopping, podName }
}

// outcome is what a test compares of a decision.
type outcome struct {
	Action   lifecycle.Action
	Attempt  int32
	Phase    cnatv1beta1.Phase
	Reason   string
	Attempts int32
	// Unstarted is status.unstartedAttempts.
	Unstarted int32
	ExitCode  *int32
	Until     time.Time
	Confirm   bool
	Release   []string
}

func outcomeOf(d lifecycle.Decision) outcome {
	o := outcome{Action: d.Action, Attempt: d.Attempt, Until: d.Until, Confirm: d.Confirm}
	if d.Status != nil {
		o.Phase, o.Reason, o.Attempts, o.ExitCode = d.Status.Phase, d.Status.Reason, d.Status.Attempts, d.Status.ExitCode
		o.Unstarted = d.Status.UnstartedAttempts
	}
	for _, p := range d.Release {
		o.Release = append(o.Release, p.Name)
	}
	return o
}

func TestDecide(t *testing.T) {
	at := newAt()
	name1, name2 := atpod.PodName(at, 1), atpod.PodName(at, 2)
	failedAlone := func(p *corev1.Pod) { p.Status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: "OutOfcpu"} }
	oldAt := newAt(func(a *cnatv1beta1.At) { a.UID = oldUID })

	tests := []struct {
		name string
		at   *cnatv1beta1.At
		pods func(g Gomega) []corev1.Pod
		now  time.Time
		want outcome
	}{
		{
			name: "not due yet: wait for the schedule",
			at:   newAt(), now: t0.Add(-time.Hour),
			want: outcome{Phase: cnatv1beta1.PhasePending, Reason: cnatv1beta1.ReasonScheduled, Until: t0},
		},
		{
			name: "due: create the first Pod, confirmed",
			at:   newAt(), now: t0,
			want: outcome{Action: lifecycle.CreatePod, Attempt: 1, Phase: cnatv1beta1.PhaseRunning, Reason: cnatv1beta1.ReasonRunning, Attempts: 1, Confirm: true},
		},
		{
			name: "a starting deadline of 0 is kept by a wake-up within the second",
			at:   newAt(func(a *cnatv1beta1.At) { a.Spec.StartingDeadlineSeconds = ptr.To[int64](0) }), now: t0.Add(10 * time.Millisecond),
			want: outcome{Action: lifecycle.CreatePod, Attempt: 1, Phase: cnatv1beta1.PhaseRunning, Reason: cnatv1beta1.ReasonRunning, Attempts: 1, Confirm: true},
		},
		{
			name: "a deadline above what a Duration holds does not overflow into a miss",
			at:   newAt(func(a *cnatv1beta1.At) { a.Spec.StartingDeadlineSeconds = ptr.To[int64](9_300_000_000) }), now: t0.Add(time.Hour),
			want: outcome{Action: lifecycle.CreatePod, Attempt: 1, Phase: cnatv1beta1.PhaseRunning, Reason: cnatv1beta1.ReasonRunning, Attempts: 1, Confirm: true},
		},
		{
			name: "Pod created, status not written: adopted, not created again",
			at:   newAt(),
			pods: func(g Gomega) []corev1.Pod { return []corev1.Pod{podOf(g, at, 1, t0)} },
			now:  t0.Add(time.Second),
			want: outcome{Phase: cnatv1beta1.PhaseRunning, Reason: cnatv1beta1.ReasonRunning, Attempts: 1},
		},
		{
			name: "a recorded attempt whose Pod vanished is reported, never run again",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(3)),
			now:  t0.Add(time.Minute),
			want: outcome{Phase: cnatv1beta1.PhaseFailed, Reason: cnatv1beta1.ReasonPodDeleted, Attempts: 1, Confirm: true},
		},
		{
			name: "Pod deleted while it ran, then killed: PodDeleted, not retried",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(3)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, running, deletedAt(t0.Add(time.Minute)), exited(137, t0.Add(time.Minute+2*time.Second)))}
			},
			now:  t0.Add(2 * time.Minute),
			want: outcome{Phase: cnatv1beta1.PhaseFailed, Reason: cnatv1beta1.ReasonPodDeleted, Attempts: 1, ExitCode: ptr.To[int32](137), Release: []string{name1}},
		},
		{
			name: "deleted while it ran, killed, then deleted at once by its kubelet; the watch saw it deleted first: PodDeleted, not retried",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(3)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, running, deletedAt(t0.Add(time.Minute)), exited(137, t0.Add(time.Minute+2*time.Second)), deletedAgainByKubelet, seenDeleting)}
			},
			now:  t0.Add(2 * time.Minute),
			want: outcome{Phase: cnatv1beta1.PhaseFailed, Reason: cnatv1beta1.ReasonPodDeleted, Attempts: 1, ExitCode: ptr.To[int32](137), Release: []string{name1}},
		},
		{
			name: "deleted while it ran, exited 0 on SIGTERM, then deleted at once by its kubelet; the watch saw it deleted first: never Succeeded",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(3)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, running, deletedAt(t0.Add(time.Minute)), exited(0, t0.Add(time.Minute+time.Second)), deletedAgainByKubelet, seenDeleting)}
			},
			now:  t0.Add(2 * time.Minute),
			want: outcome{Phase: cnatv1beta1.PhaseFailed, Reason: cnatv1beta1.ReasonPodDeleted, Attempts: 1, ExitCode: ptr.To[int32](0), Release: []string{name1}},
		},
		{
			name: "deleted while it ran and deleted again by its kubelet after a restart: the status recorded it stopping, PodDeleted",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(3), stoppingRecorded(name1)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, running, deletedAt(t0.Add(time.Minute)), exited(137, t0.Add(time.Minute+2*time.Second)), deletedAgainByKubelet)}
			},
			now:  t0.Add(2 * time.Minute),
			want: outcome{Phase: cnatv1beta1.PhaseFailed, Reason: cnatv1beta1.ReasonPodDeleted, Attempts: 1, ExitCode: ptr.To[int32](137), Release: []string{name1}},
		},
		{
			name: "deleted at once while on its node and not finished (forced): an interruption, recorded as PodStopping",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(3)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, running, deletedAt(t0.Add(time.Minute)), deletedAgainByKubelet)}
			},
			now:  t0.Add(2 * time.Minute),
			want: outcome{Phase: cnatv1beta1.PhaseRunning, Reason: cnatv1beta1.ReasonPodStopping, Attempts: 1},
		},
		{
			name: "forced deletion recorded as PodStopping, then killed: deleted, not run again",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(3), stoppingRecorded(name1)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, running, deletedAt(t0.Add(time.Minute)), deletedAgainByKubelet, exited(137, t0.Add(time.Minute)))}
			},
			now:  t0.Add(2 * time.Minute),
			want: outcome{Phase: cnatv1beta1.PhaseFailed, Reason: cnatv1beta1.ReasonPodDeleted, Attempts: 1, ExitCode: ptr.To[int32](137), Release: []string{name1}},
		},
		{
			name: "finished and deleted, nothing seen of either (a restart between), its kubelet reported the end after it learned of the deletion: not run again, not Succeeded, said",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(3)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, running, deletedAt(t0.Add(time.Minute)), exited(0, t0.Add(time.Minute+2*time.Second)),
					reportedAt(2, 2), deletedAgainByKubelet)}
			},
			now:  t0.Add(2 * time.Minute),
			want: outcome{Phase: cnatv1beta1.PhaseFailed, Reason: cnatv1beta1.ReasonPodDeleted, Attempts: 1, ExitCode: ptr.To[int32](0), Confirm: true, Release: []string{name1}},
		},
		{
			name: "finished and deleted, nothing seen of either, its kubelet reports no generation: its own outcome (what cannot be known)",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(3)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, running, deletedAt(t0.Add(time.Minute)), exited(0, t0.Add(time.Minute+2*time.Second)), deletedAgainByKubelet)}
			},
			now:  t0.Add(2 * time.Minute),
			want: outcome{Phase: cnatv1beta1.PhaseSucceeded, Reason: cnatv1beta1.ReasonCompleted, Attempts: 1, ExitCode: ptr.To[int32](0), Release: []string{name1}},
		},
		{
			name: "finished, its end reported before a janitor's deletion, nothing seen (a restart between): its own outcome",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(3)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, running, exited(0, t0.Add(time.Minute)), reportedAt(2, 1), deletedAt(t0.Add(time.Minute)))}
			},
			now:  t0.Add(2 * time.Minute),
			want: outcome{Phase: cnatv1beta1.PhaseSucceeded, Reason: cnatv1beta1.ReasonCompleted, Attempts: 1, ExitCode: ptr.To[int32](0), Release: []string{name1}},
		},
		{
			name: "finished, seen so by the watch, then deleted at once: its own outcome, as after a janitor",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(3)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, running, exited(137, t0.Add(time.Minute+2*time.Second)), seenFinishing, deletedAt(t0.Add(2*time.Minute)))}
			},
			now:  t0.Add(2 * time.Minute),
			want: outcome{Phase: cnatv1beta1.PhaseRunning, Reason: cnatv1beta1.ReasonRetrying, Attempts: 1, ExitCode: ptr.To[int32](137), Until: t0.Add(2*time.Minute + 10*time.Second)},
		},
		{
			name: "its command's container restarted (its image patched): never one clean run, not run again",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(3)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, running, exited(0, t0.Add(time.Minute)), restarted(1))}
			},
			now:  t0.Add(2 * time.Minute),
			want: outcome{Phase: cnatv1beta1.PhaseFailed, Reason: cnatv1beta1.ReasonCommandRestarted, Attempts: 1, ExitCode: ptr.To[int32](0), Confirm: true, Release: []string{name1}},
		},
		{
			name: "its command's container restarted, then failed with retries left: never one clean run, not run again",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(3)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, running, exited(1, t0.Add(time.Minute)), restarted(1))}
			},
			now:  t0.Add(2 * time.Minute),
			want: outcome{Phase: cnatv1beta1.PhaseFailed, Reason: cnatv1beta1.ReasonCommandRestarted, Attempts: 1, ExitCode: ptr.To[int32](1), Confirm: true, Release: []string{name1}},
		},
		{
			name: "its failure recorded with a retry time, then deleted at once, its kubelet's report after the deletion: still its own failure, retried",
			at: newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(3), retryRecorded(t0.Add(time.Minute+10*time.Second)),
				func(a *cnatv1beta1.At) { a.Status.PodName = name1 }),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, running, exited(1, t0.Add(time.Minute)), reportedAt(2, 2), deletedAt(t0.Add(time.Minute+2*time.Second)))}
			},
			now:  t0.Add(time.Minute + 5*time.Second),
			want: outcome{Phase: cnatv1beta1.PhaseRunning, Reason: cnatv1beta1.ReasonRetrying, Attempts: 1, ExitCode: ptr.To[int32](1), Until: t0.Add(time.Minute + 10*time.Second)},
		},
		{
			name: "killed within the second it was deleted: the grace period says it was running",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(3)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, running, deletedAt(t0.Add(time.Minute)), exited(143, t0.Add(time.Minute)))}
			},
			now:  t0.Add(2 * time.Minute),
			want: outcome{Phase: cnatv1beta1.PhaseFailed, Reason: cnatv1beta1.ReasonPodDeleted, Attempts: 1, ExitCode: ptr.To[int32](143), Release: []string{name1}},
		},
		{
			name: "failed and deleted by a janitor within the same second: its own failure, retried",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(3)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, exited(1, t0.Add(time.Second)), seenFinishing, deletedAt(t0.Add(time.Second)))}
			},
			now:  t0.Add(2 * time.Second),
			want: outcome{Phase: cnatv1beta1.PhaseRunning, Reason: cnatv1beta1.ReasonRetrying, Attempts: 1, ExitCode: ptr.To[int32](1), Until: t0.Add(12 * time.Second)},
		},
		{
			name: "a Pod that failed, then was deleted by a janitor, is retried after its backoff",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(3)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, exited(1, t0.Add(time.Second)), seenFinishing, deletedAt(t0.Add(5*time.Second)))}
			},
			now:  t0.Add(6 * time.Second),
			want: outcome{Phase: cnatv1beta1.PhaseRunning, Reason: cnatv1beta1.ReasonRetrying, Attempts: 1, ExitCode: ptr.To[int32](1), Until: t0.Add(16 * time.Second)},
		},
		{
			name: "failed without any container finishing: the retry counts from when the controller saw it, on its clock",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(1)),
			pods: func(g Gomega) []corev1.Pod { return []corev1.Pod{podOf(g, at, 1, t0, failedAlone)} },
			now:  t0.Add(9 * time.Second),
			want: outcome{Phase: cnatv1beta1.PhaseRunning, Reason: cnatv1beta1.ReasonRetrying, Attempts: 1, Until: t0.Add(19 * time.Second)},
		},
		{
			name: "the retry time recorded in the status is kept, not pushed back on every look",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(1), retryRecorded(t0.Add(10*time.Second))),
			pods: func(g Gomega) []corev1.Pod { return []corev1.Pod{podOf(g, at, 1, t0, failedAlone)} },
			now:  t0.Add(5 * time.Second),
			want: outcome{Phase: cnatv1beta1.PhaseRunning, Reason: cnatv1beta1.ReasonRetrying, Attempts: 1, Until: t0.Add(10 * time.Second)},
		},
		{
			name: "the recorded retry time has come: the next attempt starts",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(1), retryRecorded(t0.Add(10*time.Second))),
			pods: func(g Gomega) []corev1.Pod { return []corev1.Pod{podOf(g, at, 1, t0, failedAlone)} },
			now:  t0.Add(10 * time.Second),
			want: outcome{Action: lifecycle.CreatePod, Attempt: 2, Phase: cnatv1beta1.PhaseRunning, Reason: cnatv1beta1.ReasonRunning, Attempts: 2, Confirm: true},
		},
		{
			name: "deleted while it ran, then exited 0 on SIGTERM: interrupted, never Succeeded",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(3)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, running, deletedAt(t0.Add(time.Minute)), exitedOnNode(0, t0.Add(time.Minute+time.Second)))}
			},
			now:  t0.Add(2 * time.Minute),
			want: outcome{Phase: cnatv1beta1.PhaseFailed, Reason: cnatv1beta1.ReasonPodDeleted, Attempts: 1, ExitCode: ptr.To[int32](0), Release: []string{name1}},
		},
		{
			name: "being deleted on its node, not stopped yet: nothing is decided while the command may run",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(3)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, running, deletedAt(t0.Add(time.Minute)))}
			},
			now:  t0.Add(time.Hour),
			want: outcome{Phase: cnatv1beta1.PhaseRunning, Reason: cnatv1beta1.ReasonPodStopping, Attempts: 1},
		},
		{
			name: "evicted from a lost node, still Running as far as the API server knows: nothing is decided",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(3)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, running, disrupted("DeletionByTaintManager"), deletedAt(t0.Add(time.Minute)))}
			},
			now:  t0.Add(time.Hour),
			want: outcome{Phase: cnatv1beta1.PhaseRunning, Reason: cnatv1beta1.ReasonPodStopping, Attempts: 1},
		},
		{
			name: "evicted before its command started: retried without counting against backoffLimit 0",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, disrupted("EvictionByEvictionAPI"), func(p *corev1.Pod) { p.Spec.NodeName = "node" },
					deletedAt(t0.Add(time.Second)), stoppedBeforeItRan)}
			},
			now:  t0.Add(2 * time.Second),
			want: outcome{Phase: cnatv1beta1.PhaseRunning, Reason: cnatv1beta1.ReasonRetrying, Attempts: 1, ExitCode: ptr.To[int32](137), Until: t0.Add(12 * time.Second)},
		},
		{
			name: "evicted once its kubelet acknowledged it, no container shown started (a container lost after it ran reads so): a failure, Failed with backoffLimit 0",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, disrupted("EvictionByEvictionAPI"), func(p *corev1.Pod) { p.Spec.NodeName = "node" },
					deletedAt(t0.Add(time.Second)), stoppedBeforeItRan, func(p *corev1.Pod) { p.Status.StartTime = ptr.To(metav1.NewTime(t0)) })}
			},
			now:  t0.Add(2 * time.Second),
			want: outcome{Phase: cnatv1beta1.PhaseFailed, Reason: cnatv1beta1.ReasonDisrupted, Attempts: 1, ExitCode: ptr.To[int32](137), Release: []string{name1}},
		},
		{
			name: "preempted before it was scheduled: retried without counting",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), retryRecorded(t0.Add(12*time.Second))),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, disrupted("PreemptionByScheduler"), deletedAt(t0.Add(time.Second)))}
			},
			now:  t0.Add(12 * time.Second),
			want: outcome{Action: lifecycle.CreatePod, Attempt: 2, Phase: cnatv1beta1.PhaseRunning, Reason: cnatv1beta1.ReasonRunning, Attempts: 2, Confirm: true},
		},
		{
			name: "the retry of an attempt that never started runs: the status counts the unstarted attempt, its Pod may go",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{
					podOf(g, at, 1, t0, disrupted("PreemptionByScheduler"), deletedAt(t0.Add(time.Second))),
					podOf(g, at, 2, t0.Add(12*time.Second), running),
				}
			},
			now:  t0.Add(13 * time.Second),
			want: outcome{Phase: cnatv1beta1.PhaseRunning, Reason: cnatv1beta1.ReasonRunning, Attempts: 2, Unstarted: 1, Release: []string{name1}},
		},
		{
			name: "after one unstarted attempt, the second attempt's failure is the first that counts: Failed with backoffLimit 0",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 2), unstartedRecorded(1)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 2, t0.Add(12*time.Second), exitedOnNode(1, t0.Add(20*time.Second)))}
			},
			now:  t0.Add(21 * time.Second),
			want: outcome{Phase: cnatv1beta1.PhaseFailed, Reason: cnatv1beta1.ReasonError, Attempts: 2, Unstarted: 1, ExitCode: ptr.To[int32](1), Release: []string{name2}},
		},
		{
			name: "after one unstarted attempt, the second attempt's failure with a retry left is retried",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 2), unstartedRecorded(1), backoffLimit(1)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 2, t0.Add(12*time.Second), exitedOnNode(1, t0.Add(20*time.Second)))}
			},
			now:  t0.Add(21 * time.Second),
			want: outcome{Phase: cnatv1beta1.PhaseRunning, Reason: cnatv1beta1.ReasonRetrying, Attempts: 2, Unstarted: 1, ExitCode: ptr.To[int32](1), Until: t0.Add(31 * time.Second)},
		},
		{
			name: "evicted after its command started, no retry left: Disrupted",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, running, disrupted("EvictionByEvictionAPI"), deletedAt(t0.Add(time.Minute)), exitedOnNode(143, t0.Add(time.Minute)))}
			},
			now:  t0.Add(2 * time.Minute),
			want: outcome{Phase: cnatv1beta1.PhaseFailed, Reason: cnatv1beta1.ReasonDisrupted, Attempts: 1, ExitCode: ptr.To[int32](143), Release: []string{name1}},
		},
		{
			name: "drained after its command started, a retry left: retried as a failure",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(1)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, running, disrupted("EvictionByEvictionAPI"), deletedAt(t0.Add(time.Minute)), exitedOnNode(0, t0.Add(time.Minute)))}
			},
			now:  t0.Add(2 * time.Minute),
			want: outcome{Phase: cnatv1beta1.PhaseRunning, Reason: cnatv1beta1.ReasonRetrying, Attempts: 1, ExitCode: ptr.To[int32](0), Until: t0.Add(2*time.Minute + 10*time.Second)},
		},
		{
			name: "evicted by its kubelet (node pressure) with exit 0: never Succeeded",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, exitedOnNode(0, t0.Add(time.Minute)), disrupted("TerminationByKubelet"))}
			},
			now:  t0.Add(2 * time.Minute),
			want: outcome{Phase: cnatv1beta1.PhaseFailed, Reason: cnatv1beta1.ReasonDisrupted, Attempts: 1, ExitCode: ptr.To[int32](0), Release: []string{name1}},
		},
		{
			name: "its node deleted, PodGC marked it Failed: the command may have run, so it counts",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, func(p *corev1.Pod) {
					p.Spec.NodeName = "gone"
					p.Status.Phase = corev1.PodFailed
				}, disrupted("DeletionByPodGC"), deletedAt(t0.Add(time.Minute)))}
			},
			now:  t0.Add(2 * time.Minute),
			want: outcome{Phase: cnatv1beta1.PhaseFailed, Reason: cnatv1beta1.ReasonDisrupted, Attempts: 1, Release: []string{name1}},
		},
		{
			name: "deleted by a user, its node deleted since: the deletion is reported, not run again",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(3)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, running, deletedAt(t0.Add(time.Minute)), func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }, disrupted("DeletionByPodGC"))}
			},
			now:  t0.Add(2 * time.Minute),
			want: outcome{Phase: cnatv1beta1.PhaseFailed, Reason: cnatv1beta1.ReasonPodDeleted, Attempts: 1, Release: []string{name1}},
		},
		{
			name: "node clock an hour ahead: the retry still comes after the backoff, on the controller's clock",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(1)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, exitedOnNode(1, t0.Add(time.Hour)))}
			},
			now:  t0.Add(5 * time.Second),
			want: outcome{Phase: cnatv1beta1.PhaseRunning, Reason: cnatv1beta1.ReasonRetrying, Attempts: 1, ExitCode: ptr.To[int32](1), Until: t0.Add(15 * time.Second)},
		},
		{
			name: "node clock an hour behind: the retry does not come at once",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(1)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, exitedOnNode(1, t0.Add(-time.Hour)))}
			},
			now:  t0.Add(5 * time.Second),
			want: outcome{Phase: cnatv1beta1.PhaseRunning, Reason: cnatv1beta1.ReasonRetrying, Attempts: 1, ExitCode: ptr.To[int32](1), Until: t0.Add(15 * time.Second)},
		},
		{
			name: "node clock an hour ahead: a janitor's deletion of a Pod that had failed keeps its retry",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(1)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, exitedOnNode(1, t0.Add(time.Hour)), seenFinishing, deletedAt(t0.Add(3*time.Second)))}
			},
			now:  t0.Add(5 * time.Second),
			want: outcome{Phase: cnatv1beta1.PhaseRunning, Reason: cnatv1beta1.ReasonRetrying, Attempts: 1, ExitCode: ptr.To[int32](1), Until: t0.Add(15 * time.Second)},
		},
		{
			name: "node clock an hour behind: a Pod deleted while it ran and killed is not run again",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(1)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, running, deletedAt(t0.Add(3*time.Second)), exitedOnNode(137, t0.Add(-time.Hour)))}
			},
			now:  t0.Add(5 * time.Second),
			want: outcome{Phase: cnatv1beta1.PhaseFailed, Reason: cnatv1beta1.ReasonPodDeleted, Attempts: 1, ExitCode: ptr.To[int32](137), Release: []string{name1}},
		},
		{
			name: "a forged failing Pod of attempt 2 while attempt 1 runs: not counted, attempt 1 is not let go",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(3)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, running), podOf(g, at, 2, t0.Add(time.Second), exitedOnNode(1, t0.Add(2*time.Second)))}
			},
			now:  t0.Add(time.Minute),
			want: outcome{Phase: cnatv1beta1.PhaseRunning, Reason: cnatv1beta1.ReasonRunning, Attempts: 1, Release: []string{name2}},
		},
		{
			name: "a forged succeeded Pod of attempt 1 before the At's time: not counted, the At waits for its time",
			at:   newAt(),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0.Add(-time.Hour), exitedOnNode(0, t0.Add(-time.Hour)))}
			},
			now:  t0.Add(-time.Minute),
			want: outcome{Phase: cnatv1beta1.PhasePending, Reason: cnatv1beta1.ReasonScheduled, Until: t0, Release: []string{name1}},
		},
		{
			name: "a forged Pod of attempt 3 after a succeeded attempt 1: the At stays Succeeded",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(3)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, exitedOnNode(0, t0.Add(time.Second))), podOf(g, at, 3, t0.Add(time.Second), exitedOnNode(1, t0.Add(2*time.Second)))}
			},
			now:  t0.Add(time.Minute),
			want: outcome{Phase: cnatv1beta1.PhaseSucceeded, Reason: cnatv1beta1.ReasonCompleted, Attempts: 1, ExitCode: ptr.To[int32](0), Release: []string{atpod.PodName(at, 3), name1}},
		},
		{
			name: "suspended between retries: the retry waits for the resume",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(1), func(a *cnatv1beta1.At) { a.Spec.Suspend = ptr.To(true) }),
			pods: func(g Gomega) []corev1.Pod { return []corev1.Pod{podOf(g, at, 1, t0, exited(2, t0))} },
			now:  t0.Add(time.Hour),
			want: outcome{Phase: cnatv1beta1.PhaseRunning, Reason: cnatv1beta1.ReasonSuspended, Attempts: 1, ExitCode: ptr.To[int32](2)},
		},
		{
			name: "the next attempt runs: the failed one's Pod may go",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 2), backoffLimit(1)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, exited(2, t0)), podOf(g, at, 2, t0.Add(10*time.Second), running)}
			},
			now:  t0.Add(11 * time.Second),
			want: outcome{Phase: cnatv1beta1.PhaseRunning, Reason: cnatv1beta1.ReasonRunning, Attempts: 2, Release: []string{name1}},
		},
		{
			name: "the last attempt failed: Failed, every Pod released",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 2), backoffLimit(1)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, exited(2, t0), released), podOf(g, at, 2, t0.Add(10*time.Second), exited(3, t0.Add(12*time.Second)))}
			},
			now:  t0.Add(13 * time.Second),
			want: outcome{Phase: cnatv1beta1.PhaseFailed, Reason: cnatv1beta1.ReasonBackoffLimitExceeded, Attempts: 2, ExitCode: ptr.To[int32](3), Release: []string{name2}},
		},
		{
			name: "a Pod that cannot pull its image: the At says why it is not running",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, func(p *corev1.Pod) {
					p.Status = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
						Name: "command", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull"}},
					}}}
				})}
			},
			now:  t0.Add(time.Second),
			want: outcome{Phase: cnatv1beta1.PhaseRunning, Reason: cnatv1beta1.ReasonPodPending, Attempts: 1},
		},
		{
			name: "re-created At: the old incarnation's finished Pod is neither adopted nor reported; the new one runs",
			at:   newAt(),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, oldAt, 1, t0.Add(-time.Hour), exited(0, t0))}
			},
			now:  t0,
			want: outcome{Action: lifecycle.CreatePod, Attempt: 1, Phase: cnatv1beta1.PhaseRunning, Reason: cnatv1beta1.ReasonRunning, Attempts: 1, Confirm: true, Release: []string{atpod.PodName(oldAt, 1)}},
		},
		{
			name: "orphaned Pod of the old incarnation (no owner left): released, not adopted",
			at:   newAt(func(a *cnatv1beta1.At) { a.Spec.Schedule = t0.Add(time.Hour).Format(time.RFC3339) }),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, oldAt, 1, t0.Add(-time.Hour), func(p *corev1.Pod) { p.OwnerReferences = nil })}
			},
			now:  t0,
			want: outcome{Phase: cnatv1beta1.PhasePending, Reason: cnatv1beta1.ReasonScheduled, Until: t0.Add(time.Hour), Confirm: true, Release: []string{atpod.PodName(oldAt, 1)}},
		},
		{
			name: "someone else's Pod with the name is not adopted",
			at:   newAt(),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, released, exited(0, t0), func(p *corev1.Pod) { p.OwnerReferences = nil })}
			},
			now:  t0,
			want: outcome{Action: lifecycle.CreatePod, Attempt: 1, Phase: cnatv1beta1.PhaseRunning, Reason: cnatv1beta1.ReasonRunning, Attempts: 1, Confirm: true},
		},
		{
			name: "finished: the status is final, its Pods released, deleted once the TTL is up",
			at: newAt(recorded(cnatv1beta1.PhaseSucceeded, 1), func(a *cnatv1beta1.At) {
				a.Status.CompletionTime = ptr.To(metav1.NewTime(t0))
				a.Spec.TTLSecondsAfterFinished = ptr.To[int32](60)
			}),
			pods: func(g Gomega) []corev1.Pod { return []corev1.Pod{podOf(g, at, 1, t0, exited(0, t0))} },
			now:  t0.Add(time.Minute),
			want: outcome{Action: lifecycle.DeleteAt, Phase: cnatv1beta1.PhaseSucceeded, Attempts: 1, Release: []string{name1}},
		},
		{
			name: "finished, its TTL not up yet: deleted when it is",
			at: newAt(recorded(cnatv1beta1.PhaseSucceeded, 1), func(a *cnatv1beta1.At) {
				a.Status.CompletionTime = ptr.To(metav1.NewTime(t0))
				a.Spec.TTLSecondsAfterFinished = ptr.To[int32](60)
			}),
			pods: func(g Gomega) []corev1.Pod { return []corev1.Pod{podOf(g, at, 1, t0, exited(0, t0), released)} },
			now:  t0.Add(59 * time.Second),
			want: outcome{Phase: cnatv1beta1.PhaseSucceeded, Attempts: 1, Until: t0.Add(time.Minute)},
		},
		{
			name: "no At: its Pods are released, confirmed",
			pods: func(g Gomega) []corev1.Pod { return []corev1.Pod{podOf(g, at, 1, t0, running)} },
			now:  t0,
			want: outcome{Confirm: true, Release: []string{name1}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var pods []corev1.Pod
			if tc.pods != nil {
				pods = tc.pods(g)
			}
			g.Expect(outcomeOf(lifecycle.Decide(tc.at, pods, tc.now))).To(BeComparableTo(tc.want, actionNames))
		})
	}
}

// actionNames shows Decide's actions by name in a diff.
var actionNames = cmp.Transformer("name", func(a lifecycle.Action) string {
	if name, ok := map[lifecycle.Action]string{lifecycle.Nothing: "Nothing", lifecycle.CreatePod: "CreatePod", lifecycle.DeleteAt: "DeleteAt"}[a]; ok {
		return name
	}
	return fmt.Sprintf("Action(%d)", a)
})

// TestDecideMessages checks what the At says in the cases where the words
// matter: why a Pod is not running, and that a foreign Pod is never named
// as the At's.
func TestDecideMessages(t *testing.T) {
	g := NewWithT(t)
	at := newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(2))
	pod := podOf(g, at, 1, t0, func(p *corev1.Pod) {
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available",
		}}}
	})
	d := lifecycle.Decide(at, []corev1.Pod{pod}, t0.Add(time.Second))
	g.Expect(d.Status).NotTo(BeNil())
	g.Expect(d.Status.Message).To(Equal("Pod " + pod.Name + " of attempt 1 is not running: Unschedulable: 0/3 nodes are available"))

	// Someone else's Pod named as the next attempt, and one that claims the
	// At (owner and labels) as its attempt 2 while attempt 1 has not failed:
	// neither is the At's, neither is named as its Pod; the claim is said.
	foreign := podOf(g, at, 2, t0, exitedOnNode(1, t0), func(p *corev1.Pod) { p.OwnerReferences = nil })
	d = lifecycle.Decide(at, []corev1.Pod{pod, foreign}, t0.Add(time.Second))
	g.Expect(d.Status.PodName).To(Equal(pod.Name))
	g.Expect(d.Status.Message).To(Equal("Pod " + pod.Name + " of attempt 1 is not running: Unschedulable: 0/3 nodes are available"))
	forged := podOf(g, at, 2, t0, exitedOnNode(1, t0))
	d = lifecycle.Decide(at, []corev1.Pod{pod, forged}, t0.Add(time.Second))
	g.Expect(d.Status.PodName).To(Equal(pod.Name))
	g.Expect(d.Status.Attempts).To(Equal(int32(1)))
	g.Expect(d.Status.Message).To(HaveSuffix("; Pod " + forged.Name + " claims this At but cnat did not make it: not counted"))

	// An edit of the command that raced the firing: the Pod runs what it
	// was made from, and the At says so.
	edited := newAt(recorded(cnatv1beta1.PhaseRunning, 1), func(a *cnatv1beta1.At) {
		a.Spec.Command = "echo edited"
		a.Generation = 2
	})
	d = lifecycle.Decide(edited, []corev1.Pod{podOf(g, at, 1, t0, running)}, t0.Add(time.Second))
	g.Expect(d.Status.Phase).To(Equal(cnatv1beta1.PhaseRunning))
	g.Expect(d.Status.Message).To(HaveSuffix("; Pod " + pod.Name + " runs the spec of generation 1: spec.command or spec.template changed since it was created"))
	d = lifecycle.Decide(edited, []corev1.Pod{podOf(g, at, 1, t0, exitedOnNode(0, t0))}, t0.Add(time.Second))
	g.Expect(d.Status.Phase).To(Equal(cnatv1beta1.PhaseSucceeded))
	g.Expect(d.Status.Message).To(ContainSubstring("runs the spec of generation 1"), "said on the outcome too")
	d = lifecycle.Decide(at, []corev1.Pod{podOf(g, at, 1, t0, running)}, t0.Add(time.Second))
	g.Expect(d.Status.Message).NotTo(ContainSubstring("runs the spec of generation"), "nothing to say when the spec is the Pod's")
}

// TestConditionsMatchREADME reads the README's table of phases and
// conditions and checks it row by row, reason by reason, against
// Conditions: the table is the function.
func TestConditionsMatchREADME(t *testing.T) {
	g := NewWithT(t)
	f, err := os.Open(filepath.Join("..", "..", "README.md"))
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = f.Close() }()
	var header []string
	rows := 0
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		cells := tableCells(scanner.Text())
		if len(cells) == 0 {
			header = nil
			continue
		}
		if cells[0] == "phase" && len(cells) == 7 {
			header = cells
			continue
		}
		if header == nil || strings.HasPrefix(cells[0], "---") {
			continue
		}
		phase := cnatv1beta1.Phase(cells[0])
		for _, reason := range strings.Split(cells[6], ",") {
			reason = strings.Trim(strings.TrimSpace(reason), "`")
			want := map[string]metav1.ConditionStatus{}
			for i, conditionType := range header[1:6] {
				if v := cells[i+1]; v != "–" {
					want[strings.Trim(conditionType, "`")] = metav1.ConditionStatus(v)
				}
			}
			g.Expect(lifecycle.Conditions(phase, reason)).To(BeComparableTo(want), "README row %s/%s against Conditions", phase, reason)
			rows++
		}
	}
	g.Expect(scanner.Err()).NotTo(HaveOccurred())
	g.Expect(rows).To(BeNumerically(">=", 10), "phase/reason rows in the README's table; is the table still there?")
}

func tableCells(line string) []string {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") {
		return nil
	}
	var cells []string
	for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
		cells = append(cells, strings.TrimSpace(c))
	}
	return cells
}

func TestEvents(t *testing.T) {
	st := func(phase cnatv1beta1.Phase, reason string, attempts int32) *cnatv1beta1.AtStatus {
		return &cnatv1beta1.AtStatus{Phase: phase, Reason: reason, Attempts: attempts, Message: "m"}
	}
	tests := []struct {
		name          string
		before, after *cnatv1beta1.AtStatus
		want          []string
	}{
		{"first look", st("", "", 0), st(cnatv1beta1.PhasePending, cnatv1beta1.ReasonScheduled, 0), nil},
		{"started: the conditions and attempts say it", st(cnatv1beta1.PhasePending, cnatv1beta1.ReasonScheduled, 0), st(cnatv1beta1.PhaseRunning, cnatv1beta1.ReasonRunning, 1), nil},
		{"started, its Pod not running", st(cnatv1beta1.PhasePending, cnatv1beta1.ReasonScheduled, 0), st(cnatv1beta1.PhaseRunning, cnatv1beta1.ReasonPodPending, 1), []string{"Warning PodPending"}},
		{"unchanged", st(cnatv1beta1.PhaseRunning, cnatv1beta1.ReasonRunning, 1), st(cnatv1beta1.PhaseRunning, cnatv1beta1.ReasonRunning, 1), nil},
		{"retrying", st(cnatv1beta1.PhaseRunning, cnatv1beta1.ReasonRunning, 1), st(cnatv1beta1.PhaseRunning, cnatv1beta1.ReasonRetrying, 1), []string{"Warning Retrying"}},
		{"retry started", st(cnatv1beta1.PhaseRunning, cnatv1beta1.ReasonRetrying, 1), st(cnatv1beta1.PhaseRunning, cnatv1beta1.ReasonRunning, 2), nil},
		{"retry started, its Pod not running", st(cnatv1beta1.PhaseRunning, cnatv1beta1.ReasonRetrying, 1), st(cnatv1beta1.PhaseRunning, cnatv1beta1.ReasonPodPending, 2), []string{"Warning PodPending"}},
		{"not running", st(cnatv1beta1.PhaseRunning, cnatv1beta1.ReasonRunning, 1), st(cnatv1beta1.PhaseRunning, cnatv1beta1.ReasonPodPending, 1), []string{"Warning PodPending"}},
		{"succeeded", st(cnatv1beta1.PhaseRunning, cnatv1beta1.ReasonRunning, 1), st(cnatv1beta1.PhaseSucceeded, cnatv1beta1.ReasonCompleted, 1), []string{"Normal Succeeded"}},
		{"failed", st(cnatv1beta1.PhaseRunning, cnatv1beta1.ReasonRunning, 1), st(cnatv1beta1.PhaseFailed, cnatv1beta1.ReasonError, 1), []string{"Warning Failed"}},
		{"refused at its first look: the refusal, not Scheduled", st("", "", 0), st(cnatv1beta1.PhasePending, cnatv1beta1.ReasonPodForbidden, 0), []string{"Warning PodForbidden"}},
		{"refused again: announced once", st(cnatv1beta1.PhasePending, cnatv1beta1.ReasonPodForbidden, 0), st(cnatv1beta1.PhasePending, cnatv1beta1.ReasonPodForbidden, 0), nil},
		{"server error after a refusal", st(cnatv1beta1.PhasePending, cnatv1beta1.ReasonPodForbidden, 0), st(cnatv1beta1.PhasePending, cnatv1beta1.ReasonPodCreateFailed, 0), []string{"Warning PodCreateFailed"}},
		{"being stopped", st(cnatv1beta1.PhaseRunning, cnatv1beta1.ReasonRunning, 1), st(cnatv1beta1.PhaseRunning, cnatv1beta1.ReasonPodStopping, 1), []string{"Warning PodStopping"}},
		{"missed", st(cnatv1beta1.PhasePending, cnatv1beta1.ReasonScheduled, 0), st(cnatv1beta1.PhaseMissed, cnatv1beta1.ReasonMissed, 0), []string{"Warning Missed"}},
		{"finished twice is announced once", st(cnatv1beta1.PhaseSucceeded, cnatv1beta1.ReasonCompleted, 1), st(cnatv1beta1.PhaseSucceeded, cnatv1beta1.ReasonCompleted, 1), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var got []string
			for _, e := range lifecycle.Events(tc.before, tc.after) {
				got = append(got, e.Type+" "+e.Reason)
			}
			g.Expect(got).To(BeComparableTo(tc.want))
		})
	}
}
