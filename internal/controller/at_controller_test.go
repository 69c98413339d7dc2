package controller

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/controller/atstatus"
)

func condition(at *cnatv1beta1.At, conditionType string) *metav1.Condition {
	return meta.FindStatusCondition(at.Status.Conditions, conditionType)
}

func TestFiresAtItsTimeAndNotBefore(t *testing.T) {
	h := newHarness(t)
	h.createAt("hello", cnatv1beta1.AtSpec{Schedule: schedule(start.Add(time.Hour)), Command: "echo hello"})

	res := h.reconcile("hello")
	h.g.Expect(res.RequeueAfter).To(BeNumerically("~", time.Hour, time.Second), "the timer is the time until the schedule")
	at := h.at("hello")
	h.g.Expect(at.Status.Phase).To(Equal(cnatv1beta1.PhasePending))
	h.g.Expect(at.Status.ScheduledTime.Time).To(BeTemporally("==", start.Add(time.Hour)))
	h.g.Expect(condition(at, cnatv1beta1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
	h.g.Expect(h.events()).To(BeEmpty(), "being scheduled is no Event: the Ready condition and scheduledTime say it")

	h.clock.Step(time.Hour - time.Second)
	h.reconcile("hello")
	h.g.Expect(h.pods("hello")).To(BeEmpty(), "one second early: no Pod")

	h.clock.Step(time.Second)
	h.reconcile("hello")
	pods := h.pods("hello")
	h.g.Expect(pods).To(HaveLen(1))
	pod := pods[0]
	h.g.Expect(pod.Name).To(Equal(h.podName("hello", 1)))
	h.g.Expect(pod.Spec.RestartPolicy).To(Equal(corev1.RestartPolicyNever))
	h.g.Expect(pod.Spec.Containers[0].Command).To(Equal([]string{"/bin/sh", "-c", "echo hello"}))
	h.g.Expect(pod.Spec.Containers[0].Image).To(Equal("busybox:1.37"))
	h.g.Expect(metav1.IsControlledBy(&pod, at)).To(BeTrue(), "the At controls its Pod")
	h.g.Expect(pod.ManagedFields).To(ContainElement(HaveField("Manager", cnatv1beta1.FieldManager)))
	h.g.Expect(h.writes.Load()).To(Equal(int32(2)), "firing is one write, the Pod (after the Pending status)")
	h.g.Expect(h.at("hello").Status.Attempts).To(BeZero(), "the Pod is the record until the next reconcile")

	h.reconcile("hello") // the Pod's watch event
	at = h.at("hello")
	h.g.Expect(at.Status.Phase).To(Equal(cnatv1beta1.PhaseRunning))
	h.g.Expect(at.Status.Attempts).To(Equal(int32(1)))
	h.g.Expect(at.Status.PodName).To(Equal(h.podName("hello", 1)))
	h.g.Expect(at.Status.StartTime.Time).To(BeTemporally("==", pod.CreationTimestamp.Time), "started when its Pod was created")
	h.g.Expect(condition(at, cnatv1beta1.ConditionReconciling).Status).To(Equal(metav1.ConditionTrue))
	h.g.Expect(at.ManagedFields).To(ContainElement(And(
		HaveField("Manager", atstatus.StatusFieldManager), HaveField("Subresource", "status"))))
	h.g.Expect(h.events()).To(BeEmpty(), "a start is no Event: the Reconciling condition, attempts and startTime say it")
}

func TestSucceedsWithExitCodeZero(t *testing.T) {
	h := newHarness(t)
	h.createAt("ok", cnatv1beta1.AtSpec{Schedule: schedule(start), Command: "true"})
	h.reconcile("ok")
	h.runPod(h.podName("ok", 1))
	h.reconcile("ok")
	h.g.Expect(h.at("ok").Status.Phase).To(Equal(cnatv1beta1.PhaseRunning))

	h.clock.Step(5 * time.Second)
	h.finishPod(h.podName("ok", 1), 0)
	h.reconcile("ok")

	at := h.at("ok")
	h.g.Expect(at.Status.Phase).To(Equal(cnatv1beta1.PhaseSucceeded))
	h.g.Expect(at.Status.ExitCode).To(Equal(ptr.To[int32](0)))
	h.g.Expect(at.Status.Reason).To(Equal(cnatv1beta1.ReasonCompleted))
	h.g.Expect(at.Status.CompletionTime.Time).To(BeTemporally("==", start.Add(5*time.Second)))
	for conditionType, want := range map[string]metav1.ConditionStatus{
		cnatv1beta1.ConditionReady:     metav1.ConditionTrue,
		cnatv1beta1.ConditionSucceeded: metav1.ConditionTrue,
		cnatv1beta1.ConditionFailed:    metav1.ConditionFalse,
	} {
		c := condition(at, conditionType)
		h.g.Expect(c).NotTo(BeNil(), conditionType)
		h.g.Expect(c.Status).To(Equal(want), conditionType)
		h.g.Expect(c.ObservedGeneration).To(Equal(at.Generation), conditionType)
	}
	h.g.Expect(condition(at, cnatv1beta1.ConditionReconciling)).To(BeNil())
	h.g.Expect(condition(at, cnatv1beta1.ConditionStalled)).To(BeNil())
	h.g.Expect(at.Status.ObservedGeneration).To(Equal(at.Generation))
	h.g.Expect(h.events()).To(ContainElement(ContainSubstring("Normal Succeeded")))
}

func TestFailureRecordsExitCode(t *testing.T) {
	h := newHarness(t)
	h.createAt("fails", cnatv1beta1.AtSpec{Schedule: schedule(start), Command: "exit 3"})
	h.reconcile("fails")
	h.finishPod(h.podName("fails", 1), 3)
	h.reconcile("fails")

	at := h.at("fails")
	h.g.Expect(at.Status.Phase).To(Equal(cnatv1beta1.PhaseFailed))
	h.g.Expect(at.Status.ExitCode).To(Equal(ptr.To[int32](3)))
	h.g.Expect(at.Status.Reason).To(Equal(cnatv1beta1.ReasonError))
	h.g.Expect(at.Status.Message).To(ContainSubstring("exit code 3"))
	h.g.Expect(condition(at, cnatv1beta1.ConditionFailed).Status).To(Equal(metav1.ConditionTrue))
	h.g.Expect(condition(at, cnatv1beta1.ConditionSucceeded).Status).To(Equal(metav1.ConditionFalse))
	h.g.Expect(condition(at, cnatv1beta1.ConditionStalled).Status).To(Equal(metav1.ConditionTrue))
	h.g.Expect(condition(at, cnatv1beta1.ConditionReady).Status).To(Equal(metav1.ConditionFalse))
	h.g.Expect(h.events()).To(ContainElement(ContainSubstring("Warning Failed")))
	h.g.Expect(h.pods("fails")).To(HaveLen(1), "no retry with the default backoffLimit of 0")
}

func TestRetriesUpToBackoffLimit(t *testing.T) {
	h := newHarness(t)
	h.createAt("flaky", cnatv1beta1.AtSpec{Schedule: schedule(start), Command: "exit 1", BackoffLimit: ptr.To[int32](2)})
	h.reconcile("flaky")
	h.finishPod(h.podName("flaky", 1), 1)

	res := h.reconcile("flaky")
	h.g.Expect(res.RequeueAfter).To(BeNumerically("~", 10*time.Second, time.Second), "first retry after 10s")
	at := h.at("flaky")
	h.g.Expect(at.Status.Phase).To(Equal(cnatv1beta1.PhaseRunning))
	h.g.Expect(at.Status.Reason).To(Equal(cnatv1beta1.ReasonRetrying))
	h.g.Expect(at.Status.ExitCode).To(Equal(ptr.To[int32](1)))
	h.g.Expect(h.pods("flaky")).To(HaveLen(1), "no new Pod before the backoff")

	h.clock.Step(10 * time.Second)
	h.reconcile("flaky")
	h.g.Expect(h.pods("flaky")).To(HaveLen(2))
	h.reconcile("flaky") // the Pod's watch event
	h.g.Expect(h.at("flaky").Status.PodName).To(Equal(h.podName("flaky", 2)))
	h.finishPod(h.podName("flaky", 2), 1)

	res = h.reconcile("flaky")
	h.g.Expect(res.RequeueAfter).To(BeNumerically("~", 20*time.Second, time.Second), "second retry after 20s")
	h.clock.Step(20 * time.Second)
	h.reconcile("flaky")
	h.finishPod(h.podName("flaky", 3), 7)
	h.reconcile("flaky")

	at = h.at("flaky")
	h.g.Expect(at.Status.Phase).To(Equal(cnatv1beta1.PhaseFailed))
	h.g.Expect(at.Status.Reason).To(Equal(cnatv1beta1.ReasonBackoffLimitExceeded))
	h.g.Expect(at.Status.Attempts).To(Equal(int32(3)))
	h.g.Expect(at.Status.ExitCode).To(Equal(ptr.To[int32](7)), "the last attempt's exit code")
	h.g.Expect(h.pods("flaky")).To(HaveLen(3), "backoffLimit 2 means three attempts, no more")

	h.clock.Step(time.Hour)
	h.reconcile("flaky")
	h.g.Expect(h.pods("flaky")).To(HaveLen(3))
}

func TestRetrySucceeds(t *testing.T) {
	h := newHarness(t)
	h.createAt("second-time", cnatv1beta1.AtSpec{Schedule: schedule(start), Command: "x", BackoffLimit: ptr.To[int32](1)})
	h.reconcile("second-time")
	h.finishPod(h.podName("second-time", 1), 2)
	h.reconcile("second-time")
	h.clock.Step(10 * time.Second)
	h.reconcile("second-time")
	h.finishPod(h.podName("second-time", 2), 0)
	h.reconcile("second-time")

	at := h.at("second-time")
	h.g.Expect(at.Status.Phase).To(Equal(cnatv1beta1.PhaseSucceeded))
	h.g.Expect(at.Status.ExitCode).To(Equal(ptr.To[int32](0)))
	h.g.Expect(at.Status.Attempts).To(Equal(int32(2)))
}

func TestMissedDeadline(t *testing.T) {
	h := newHarness(t)
	h.createAt("late", cnatv1beta1.AtSpec{
		Schedule: schedule(start.Add(-2 * time.Minute)), Command: "echo late", StartingDeadlineSeconds: ptr.To[int64](60),
	})
	h.reconcile("late")

	at := h.at("late")
	h.g.Expect(at.Status.Phase).To(Equal(cnatv1beta1.PhaseMissed))
	h.g.Expect(at.Status.Reason).To(Equal(cnatv1beta1.ReasonMissed))
	h.g.Expect(condition(at, cnatv1beta1.ConditionStalled).Status).To(Equal(metav1.ConditionTrue))
	h.g.Expect(condition(at, cnatv1beta1.ConditionSucceeded).Status).To(Equal(metav1.ConditionFalse))
	h.g.Expect(h.pods("late")).To(BeEmpty())
	h.g.Expect(h.events()).To(ContainElement(ContainSubstring("Warning Missed")))
}

func TestScheduleFarInThePast(t *testing.T) {
	t.Run("without a deadline it runs at once", func(t *testing.T) {
		h := newHarness(t)
		h.createAt("book", cnatv1beta1.AtSpec{Schedule: "2019-04-12T10:12:00Z", Command: "echo YAY"})
		h.reconcile("book")
		h.g.Expect(h.pods("book")).To(HaveLen(1))
		h.reconcile("book") // the Pod's watch event
		h.g.Expect(h.at("book").Status.Phase).To(Equal(cnatv1beta1.PhaseRunning))
	})
	t.Run("with a deadline it is missed", func(t *testing.T) {
		h := newHarness(t)
		h.createAt("book", cnatv1beta1.AtSpec{Schedule: "2019-04-12T10:12:00Z", Command: "echo YAY", StartingDeadlineSeconds: ptr.To[int64](3600)})
		h.reconcile("book")
		h.g.Expect(h.pods("book")).To(BeEmpty())
		h.g.Expect(h.at("book").Status.Phase).To(Equal(cnatv1beta1.PhaseMissed))
	})
}

func TestSuspendAndResume(t *testing.T) {
	h := newHarness(t)
	at := h.createAt("held", cnatv1beta1.AtSpec{Schedule: schedule(start.Add(time.Minute)), Command: "echo", Suspend: ptr.To(true)})
	res := h.reconcile("held")
	h.g.Expect(res.RequeueAfter).To(BeZero(), "a suspended At needs no timer: resuming it is an update")

	h.clock.Step(2 * time.Minute)
	h.reconcile("held")
	h.g.Expect(h.pods("held")).To(BeEmpty(), "suspended past its time: nothing runs")
	got := h.at("held")
	h.g.Expect(got.Status.Phase).To(Equal(cnatv1beta1.PhasePending))
	h.g.Expect(condition(got, cnatv1beta1.ConditionReady).Reason).To(Equal(cnatv1beta1.ReasonSuspended))

	patch := client.MergeFrom(at.DeepCopy())
	at.Spec.Suspend = ptr.To(false)
	h.g.Expect(apiClient.Patch(h.ctx, at, patch)).To(Succeed())
	h.reconcile("held")
	h.g.Expect(h.pods("held")).To(HaveLen(1), "resumed: it runs, late but within no deadline")
	h.reconcile("held") // the Pod's watch event
	h.g.Expect(h.at("held").Status.Phase).To(Equal(cnatv1beta1.PhaseRunning))
}

func TestResumedAfterDeadlineIsMissed(t *testing.T) {
	h := newHarness(t)
	at := h.createAt("held", cnatv1beta1.AtSpec{
		Schedule: schedule(start), Command: "echo", Suspend: ptr.To(true), StartingDeadlineSeconds: ptr.To[int64](30),
	})
	h.reconcile("held")
	h.clock.Step(time.Minute)
	patch := client.MergeFrom(at.DeepCopy())
	at.Spec.Suspend = nil
	h.g.Expect(apiClient.Patch(h.ctx, at, patch)).To(Succeed())
	h.reconcile("held")
	h.g.Expect(h.pods("held")).To(BeEmpty())
	h.g.Expect(h.at("held").Status.Phase).To(Equal(cnatv1beta1.PhaseMissed))
}

func TestPodDeletedWhileRunning(t *testing.T) {
	h := newHarness(t)
	name := h.runningAt("victim")
	h.g.Expect(apiClient.Delete(h.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns}})).To(Succeed())
	h.reconcile("victim")
	at := h.at("victim")
	h.g.Expect(at.Status.Phase).To(Equal(cnatv1beta1.PhaseRunning), "its node has not reported that the command stopped")
	h.g.Expect(at.Status.Reason).To(Equal(cnatv1beta1.ReasonPodStopping))
	h.g.Expect(at.Status.Message).To(ContainSubstring("node-1"))

	// The kubelet stops it; a command that exits 0 on SIGTERM is still a
	// run that was interrupted.
	h.finishPod(name, 0)
	h.reconcile("victim")
	h.removeStoppedPod(name)
	at = h.at("victim")
	h.g.Expect(at.Status.Phase).To(Equal(cnatv1beta1.PhaseFailed))
	h.g.Expect(at.Status.Reason).To(Equal(cnatv1beta1.ReasonPodDeleted))
	h.g.Expect(condition(at, cnatv1beta1.ConditionFailed).Reason).To(Equal(cnatv1beta1.ReasonPodDeleted))
	h.clock.Step(time.Hour)
	h.reconcile("victim")
	h.g.Expect(h.pods("victim")).To(BeEmpty(), "never silently re-run, even with retries left")
}

// TestPodDeletedWhileRunningThenDeletedAgainByItsKubelet: once a Pod
// deleted with a grace period has stopped, its kubelet deletes it again at
// once, and the API server stores a grace period of 0: read only as it ends,
// the Pod looks like a finished Pod a janitor deleted, whose own outcome
// stands (exit 0: Succeeded; a failure: retried). What the controller saw
// before — its watch, or the At's status once it recorded PodStopping — keeps
// the run interrupted: PodDeleted, never re-run.
func TestPodDeletedWhileRunningThenDeletedAgainByItsKubelet(t *testing.T) {
	for name, tc := range map[string]struct {
		code int32
		// seen is how the controller knew the Pod was deleted before it
		// finished.
		seen func(h *harness, pod *corev1.Pod)
	}{
		"the watch showed the deletion, exit 0 on SIGTERM": {0, func(h *harness, pod *corev1.Pod) { h.r.history.observe(pod) }},
		"the watch showed the deletion, killed":            {137, func(h *harness, pod *corev1.Pod) { h.r.history.observe(pod) }},
		"the status recorded PodStopping, then a restart": {137, func(h *harness, _ *corev1.Pod) {
			h.reconcile("victim")
			h.g.Expect(h.at("victim").Status.Reason).To(Equal(cnatv1beta1.ReasonPodStopping))
			h.r = h.newReconciler(interceptor.Funcs{})
		}},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			podName := h.runningAt("victim")

			h.g.Expect(apiClient.Delete(h.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: podName, Namespace: h.ns}})).To(Succeed())
			tc.seen(h, h.pod(podName))
			h.finishPod(podName, tc.code)
			h.removeStoppedPod(podName)
			pod := h.pod(podName)
			h.g.Expect(pod.DeletionGracePeriodSeconds).To(HaveValue(BeZero()), "the API server stores the kubelet's last deletion")

			h.reconcile("victim")
			at := h.at("victim")
			h.g.Expect(at.Status.Phase).To(Equal(cnatv1beta1.PhaseFailed))
			h.g.Expect(at.Status.Reason).To(Equal(cnatv1beta1.ReasonPodDeleted))
			h.g.Expect(at.Status.ExitCode).To(HaveValue(Equal(tc.code)))
			h.clock.Step(time.Hour)
			h.reconcile("victim")
			h.g.Expect(h.pods("victim")).To(BeEmpty(), "never re-run, even with retries left")
		})
	}
}

// TestPodFinishedThenDisruptedKeepsItsOutcome: a preemption or an eviction
// that comes after the Pod's command ended (the scheduler picks its victims
// from its cache) adds DisruptionTarget to a finished Pod, and a simulated
// kubelet acting on a stale view writes a second terminal phase over the
// first. The Pod's first terminal phase is how its run ended: seen by the
// watch, it stands (Succeeded, not re-run); a controller that did not see it
// reads the disruption, as the README's table says.
func TestPodFinishedThenDisruptedKeepsItsOutcome(t *testing.T) {
	for name, tc := range map[string]struct {
		watched bool
		phase   cnatv1beta1.Phase
		code    int32
	}{
		"the watch saw it finish":    {true, cnatv1beta1.PhaseSucceeded, 0},
		"the controller did not see": {false, cnatv1beta1.PhaseRunning, 137},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			podName := h.runningAt("late")
			h.finishPod(podName, 0)
			finished := h.pod(podName)

			// Preempted after it had finished: the condition, the deletion
			// (at once: the Pod is finished), then the stale kubelet's kill.
			disrupted := finished.DeepCopy()
			disrupted.Status.Conditions = append(disrupted.Status.Conditions, corev1.PodCondition{
				Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "PreemptionByScheduler"})
			h.g.Expect(apiClient.Status().Update(h.ctx, disrupted)).To(Succeed())
			if tc.watched {
				h.r.history.observe(finished)
				h.r.history.observeChange(finished, h.pod(podName))
			}
			h.g.Expect(apiClient.Delete(h.ctx, h.pod(podName))).To(Succeed())
			killed := h.pod(podName)
			killed.Status.Phase = corev1.PodFailed
			killed.Status.ContainerStatuses[0].State.Terminated.ExitCode = 137
			h.g.Expect(apiClient.Status().Update(h.ctx, killed)).To(Succeed())

			h.reconcile("late")
			at := h.at("late")
			h.g.Expect(at.Status.ExitCode).To(HaveValue(Equal(tc.code)))
			h.g.Expect(at.Status.Phase).To(Equal(tc.phase))
			h.clock.Step(time.Hour)
			h.reconcile("late")
			if tc.watched {
				h.g.Expect(h.pods("late")).NotTo(ContainElement(HaveField("Name", h.podName("late", 2))), "a run that ended is not run again")
			}
		})
	}
}

func TestRestartBetweenPodCreatedAndStatusWritten(t *testing.T) {
	h := newHarness(t)
	h.createAt("crash", cnatv1beta1.AtSpec{Schedule: schedule(start), Command: "echo once", BackoffLimit: ptr.To[int32](1)})

	// The first controller creates the Pod (a firing writes nothing else)
	// and dies before the Pod's watch event brings the status write.
	first := h.newReconciler(interceptor.Funcs{})
	_, err := first.Reconcile(h.ctx, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: h.ns, Name: "crash"}})
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(h.pods("crash")).To(HaveLen(1))
	h.g.Expect(h.at("crash").Status.Attempts).To(BeZero(), "the status was never written")

	// Its successor adopts the Pod rather than creating a second.
	h.clock.Step(time.Second)
	h.reconcile("crash")
	h.g.Expect(h.pods("crash")).To(HaveLen(1))
	at := h.at("crash")
	h.g.Expect(at.Status.Phase).To(Equal(cnatv1beta1.PhaseRunning))
	h.g.Expect(at.Status.Attempts).To(Equal(int32(1)))
	h.g.Expect(at.Status.PodName).To(Equal(h.podName("crash", 1)))
	h.g.Expect(at.Status.ScheduledTime.Time).To(BeTemporally("==", start), "the adopted run knows its schedule")

	// The adopted attempt fails and is retried like any other.
	h.finishPod(h.podName("crash", 1), 1)
	h.reconcile("crash")
	h.clock.Step(10 * time.Second)
	h.reconcile("crash")
	h.g.Expect(h.pods("crash")).To(HaveLen(2))
	h.reconcile("crash") // the Pod's watch event
	h.g.Expect(h.at("crash").Status.PodName).To(Equal(h.podName("crash", 2)))
}

func TestTwoReconcilersNeverCreateTwoPods(t *testing.T) {
	h := newHarness(t)
	h.createAt("race", cnatv1beta1.AtSpec{Schedule: schedule(start), Command: "echo once"})
	// Each replica's Pod create waits until the other's is under way too,
	// so that both have decided to start the At before either Pod exists:
	// the race happens every time, not when the scheduler happens to allow it.
	var creating atomic.Int32
	bothDecided := make(chan struct{})
	overlap := interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if _, ok := obj.(*corev1.Pod); ok {
			if creating.Add(1) == 2 {
				close(bothDecided)
			}
			select {
			case <-bothDecided:
			case <-time.After(30 * time.Second):
			}
		}
		return c.Create(ctx, obj, opts...)
	}}
	replicas := []*AtReconciler{h.newReconciler(overlap), h.newReconciler(overlap)}

	var wg sync.WaitGroup
	errs := make([]error, len(replicas))
	for i, r := range replicas {
		wg.Go(func() {
			_, errs[i] = r.Reconcile(h.ctx, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: h.ns, Name: "race"}})
		})
	}
	wg.Wait()
	h.g.Expect(creating.Load()).To(Equal(int32(2)), "both replicas decided to create the Pod: the race happened")
	for _, err := range errs {
		// The replica that decided on an At the other has since written to
		// loses its status write with a conflict, and tries again later.
		if err != nil {
			h.g.Expect(errors.Unwrap(err)).To(Satisfy(apierrors.IsConflict), "only a conflict: %v", err)
		}
	}
	h.g.Expect(h.pods("race")).To(HaveLen(1))
	h.reconcile("race")
	h.g.Expect(h.pods("race")).To(HaveLen(1))
	h.g.Expect(h.at("race").Status.Attempts).To(Equal(int32(1)))
}

func TestSettledAtMakesNoWrites(t *testing.T) {
	h := newHarness(t)
	h.createAt("waits", cnatv1beta1.AtSpec{Schedule: schedule(start.Add(time.Hour)), Command: "echo"})
	h.createAt("done", cnatv1beta1.AtSpec{Schedule: schedule(start.Add(time.Minute)), Command: "echo"})

	h.reconcile("waits")
	h.reconcile("done")
	h.clock.Step(time.Minute)
	h.reconcile("done")
	h.runPod(h.podName("done", 1))
	h.reconcile("done")
	h.finishPod(h.podName("done", 1), 0)
	h.reconcile("done")
	h.g.Expect(h.at("done").Status.Phase).To(Equal(cnatv1beta1.PhaseSucceeded))
	h.g.Expect(h.writes.Load()).To(BeNumerically("<=", 6),
		"a whole lifecycle (Pending, Pod, Running, Succeeded) is 4 writes and the tracking finalizer's removal, plus 1 for the other At's Pending")
	h.events()

	before := h.writes.Load()
	for range 3 {
		h.clock.Step(time.Second)
		h.reconcile("waits")
		h.reconcile("done")
	}
	h.g.Expect(h.writes.Load()-before).To(BeZero(), "settled Ats: no writes")
	h.g.Expect(h.events()).To(BeEmpty(), "and no Events")
}

func TestTTLAfterFinishedDeletesTheAt(t *testing.T) {
	h := newHarness(t)
	h.createAt("short-lived", cnatv1beta1.AtSpec{Schedule: schedule(start), Command: "echo", TTLSecondsAfterFinished: ptr.To[int32](60)})
	h.reconcile("short-lived")
	h.finishPod(h.podName("short-lived", 1), 0)
	res := h.reconcile("short-lived")
	h.g.Expect(res.RequeueAfter).To(BeNumerically("~", time.Minute, time.Second))
	h.g.Expect(h.at("short-lived").Status.Phase).To(Equal(cnatv1beta1.PhaseSucceeded))

	h.clock.Step(time.Minute)
	h.reconcile("short-lived")
	err := apiClient.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "short-lived"}, &cnatv1beta1.At{})
	h.g.Expect(err).To(Satisfy(apierrors.IsNotFound), "the At is gone after its TTL")
}

func TestUnknownTimeZoneIsStalled(t *testing.T) {
	h := newHarness(t)
	h.createAt("nowhere", cnatv1beta1.AtSpec{Schedule: "2026-11-21T09:00:00", TimeZone: ptr.To("Mars/Olympus_Mons"), Command: "echo"})
	_, err := h.r.Reconcile(h.ctx, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: h.ns, Name: "nowhere"}})
	h.g.Expect(err).To(MatchError(reconcile.TerminalError(nil)), "an invalid spec is not retried")
	at := h.at("nowhere")
	h.g.Expect(condition(at, cnatv1beta1.ConditionStalled).Reason).To(Equal(cnatv1beta1.ReasonInvalidSpec))
	h.g.Expect(condition(at, cnatv1beta1.ConditionStalled).Message).To(ContainSubstring("spec.timeZone"))
	h.g.Expect(h.pods("nowhere")).To(BeEmpty())
}

func TestTimeZoneSchedule(t *testing.T) {
	h := newHarness(t)
	// 10:30 in Berlin on 21 November is 09:30 UTC, half an hour after start.
	h.createAt("berlin", cnatv1beta1.AtSpec{Schedule: "2026-11-21T10:30", TimeZone: ptr.To("Europe/Berlin"), Command: "echo"})
	res := h.reconcile("berlin")
	h.g.Expect(res.RequeueAfter).To(BeNumerically("~", 30*time.Minute, time.Second))
	h.g.Expect(h.at("berlin").Status.ScheduledTime.Time).To(BeTemporally("==", start.Add(30*time.Minute)))
}

func TestSpecIsImmutableOnceFired(t *testing.T) {
	h := newHarness(t)
	h.createAt("fixed", cnatv1beta1.AtSpec{Schedule: schedule(start.Add(time.Minute)), Command: "echo before"})
	h.reconcile("fixed")

	// Before it fires, the spec may change.
	at := h.at("fixed")
	at.Spec.Command = "echo changed"
	h.g.Expect(apiClient.Update(h.ctx, at)).To(Succeed())

	h.clock.Step(time.Minute)
	h.reconcile("fixed")
	h.reconcile("fixed") // the Pod's watch event
	for field, edit := range map[string]func(*cnatv1beta1.AtSpec){
		"spec.command":                    func(s *cnatv1beta1.AtSpec) { s.Command = "echo after" },
		"spec.schedule and spec.timeZone": func(s *cnatv1beta1.AtSpec) { s.Schedule = schedule(start.Add(time.Hour)) },
		"spec.template": func(s *cnatv1beta1.AtSpec) {
			s.Template = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "alpine"}}}}
		},
	} {
		at := h.at("fixed")
		edit(&at.Spec)
		err := apiClient.Update(h.ctx, at)
		h.g.Expect(err).To(Satisfy(apierrors.IsInvalid), field)
		h.g.Expect(err).To(MatchError(ContainSubstring(field + " cannot change once the At has fired")))
		h.g.Expect(err).To(MatchError(ContainSubstring(strings.Fields(field)[0]+": Forbidden")), "the error names the field")
	}
	// What does not change the run may still change.
	at = h.at("fixed")
	at.Spec.TTLSecondsAfterFinished = ptr.To[int32](10)
	h.g.Expect(apiClient.Update(h.ctx, at)).To(Succeed())
	h.g.Expect(h.pods("fixed")[0].Spec.Containers[0].Command).To(ContainElement("echo changed"))
}

func TestSchemaRefusesBadInput(t *testing.T) {
	h := newHarness(t)
	for name, spec := range map[string]cnatv1beta1.AtSpec{
		"spec.schedule must be an RFC 3339 time with an offset":  {Schedule: "tomorrow 9am please", Command: "echo"},
		"spec.schedule must be a wall-clock time without offset": {Schedule: "2026-11-21T09:00:00Z", TimeZone: ptr.To("Europe/Berlin"), Command: "echo"},
		"spec.command or spec.template must be set":              {Schedule: schedule(start)},
		"spec.backoffLimit":            {Schedule: schedule(start), Command: "echo", BackoffLimit: ptr.To[int32](-1)},
		"spec.startingDeadlineSeconds": {Schedule: schedule(start), Command: "echo", StartingDeadlineSeconds: ptr.To[int64](-5)},
		"spec.command: Too long":       {Schedule: schedule(start), Command: strings.Repeat("x", 40000)},
	} {
		at := &cnatv1beta1.At{ObjectMeta: metav1.ObjectMeta{GenerateName: "bad-", Namespace: h.ns}, Spec: spec}
		err := apiClient.Create(h.ctx, at)
		h.g.Expect(err).To(Satisfy(apierrors.IsInvalid), name)
		h.g.Expect(err).To(MatchError(ContainSubstring(name)))
	}
	long := &cnatv1beta1.At{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("a", 64), Namespace: h.ns}, Spec: cnatv1beta1.AtSpec{Schedule: schedule(start), Command: "echo"}}
	err := apiClient.Create(h.ctx, long)
	h.g.Expect(err).To(MatchError(ContainSubstring("metadata.name must be at most 63 characters")))
}

// TestSlowStatusWriteDoesNotDelayTheStart: the status write of an At's
// first reconcile takes three seconds (an API server busy admitting a
// thousand Ats). The timer that wakes the At is counted from when the
// reconcile ends, so the At still wakes at its time, not three seconds
// after it.
func TestSlowStatusWriteDoesNotDelayTheStart(t *testing.T) {
	h := newHarness(t)
	h.r = h.newReconciler(interceptor.Funcs{
		SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			h.clock.Step(3 * time.Second)
			return c.SubResource(sub).Apply(ctx, obj, opts...)
		},
	})
	h.createAt("slow", cnatv1beta1.AtSpec{Schedule: schedule(start.Add(time.Minute)), Command: "true"})

	res := h.reconcile("slow")
	h.g.Expect(h.at("slow").Status.Phase).To(Equal(cnatv1beta1.PhasePending), "the status was written")
	h.g.Expect(h.clock.Now().Add(res.RequeueAfter)).To(BeTemporally("~", start.Add(time.Minute), 100*time.Millisecond),
		"woken at its time, counted from the end of the reconcile")
}
