package lifecycle_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/atpod"
	"github.com/programming-kubernetes/cnat/internal/lifecycle"
)

// TestDecideSays checks the whole of status.message in each situation the
// At describes in words of its own: which attempt runs out of how many,
// when the next one starts, why nothing is decided, how a run ended. The
// message is what `kubectl get at` and `kubectl describe at` show.
func TestDecideSays(t *testing.T) {
	at := newAt()
	name1, name2 := atpod.PodName(at, 1), atpod.PodName(at, 2)
	terminatedWith := func(reason, message string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			term := p.Status.ContainerStatuses[0].State.Terminated
			term.Reason, term.Message = reason, message
		}
	}
	tests := []struct {
		name string
		at   *cnatv1beta1.At
		pods func(g Gomega) []corev1.Pod
		now  time.Time
		want string
	}{
		{
			name: "running, out of backoffLimit+1 attempts",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(3)),
			pods: func(g Gomega) []corev1.Pod { return []corev1.Pod{podOf(g, at, 1, t0, running)} },
			now:  t0.Add(time.Second),
			want: "Pod " + name1 + " runs attempt 1 of 4",
		},
		{
			name: "finished and deleted while cnat was not watching, its kubelet's report after the deletion: the exit code is said, the outcome not taken",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(3)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, running, exited(0, t0.Add(time.Minute)), reportedAt(2, 2), deletedAt(t0.Add(time.Minute)))}
			},
			now: t0.Add(2 * time.Minute),
			want: "Pod " + name1 + " was deleted while cnat was not watching, and its kubelet reported its end (exit code 0) only after it learned of the deletion: " +
				"whether the command had ended before cannot be known, so it is not reported as Succeeded and not run again",
		},
		{
			name: "running after an attempt that never started: that one is not counted",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 2), unstartedRecorded(1), backoffLimit(1)),
			pods: func(g Gomega) []corev1.Pod { return []corev1.Pod{podOf(g, at, 2, t0.Add(12*time.Second), running)} },
			now:  t0.Add(13 * time.Second),
			want: "Pod " + name2 + " runs attempt 2 of 3",
		},
		{
			name: "failed, a retry left: how it failed and when the next attempt starts",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1), backoffLimit(1)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, exitedOnNode(2, t0.Add(20*time.Second)), terminatedWith("Error", "no such file"))}
			},
			now:  t0.Add(21 * time.Second),
			want: "Pod " + name1 + " failed with exit code 2 (Error): no such file; attempt 2 starts at 2026-11-21T09:00:31Z",
		},
		{
			name: "failed with backoffLimit 0: no count of retries",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, exitedOnNode(2, t0.Add(20*time.Second)))}
			},
			now:  t0.Add(21 * time.Second),
			want: "Pod " + name1 + " failed with exit code 2",
		},
		{
			name: "failed, no retry left: how many attempts failed",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 2), backoffLimit(1)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 2, t0.Add(10*time.Second), exitedOnNode(2, t0.Add(20*time.Second)))}
			},
			now:  t0.Add(21 * time.Second),
			want: "Pod " + name2 + " failed with exit code 2; no retry left after 2 failed attempts",
		},
		{
			name: "the kubelet's reason for the whole Pod says more than its container's",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, exitedOnNode(137, t0.Add(time.Minute)), terminatedWith("Error", ""), func(p *corev1.Pod) {
					p.Status.Reason, p.Status.Message = "DeadlineExceeded", "Pod was active on the node longer than the specified deadline"
				})}
			},
			now:  t0.Add(2 * time.Minute),
			want: "Pod " + name1 + " failed with exit code 137 (DeadlineExceeded): Pod was active on the node longer than the specified deadline",
		},
		{
			name: "an init container failed: its exit code and reason, not the command's, which never ran",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, func(p *corev1.Pod) {
					p.Spec.NodeName = "node"
					p.Status = corev1.PodStatus{
						Phase: corev1.PodFailed,
						InitContainerStatuses: []corev1.ContainerStatus{
							{Name: "fetch", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}},
							{Name: "migrate", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3, Reason: "Error", Message: "schema locked"}}},
						},
						ContainerStatuses: []corev1.ContainerStatus{
							{Name: p.Spec.Containers[0].Name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}},
						},
					}
				})}
			},
			now:  t0.Add(time.Minute),
			want: "Pod " + name1 + " failed with exit code 3 (Error): schema locked",
		},
		{
			name: "succeeded: the command's termination message",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, exitedOnNode(0, t0.Add(time.Second)), terminatedWith("Completed", "42 rows copied"))}
			},
			now:  t0.Add(2 * time.Second),
			want: "The command exited 0: 42 rows copied",
		},
		{
			name: "succeeded without a termination message",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, exitedOnNode(0, t0.Add(time.Second)), terminatedWith("Completed", ""))}
			},
			now:  t0.Add(2 * time.Second),
			want: "The command exited 0",
		},
		{
			name: "being deleted on a node that has not reported it stopped",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, running, deletedAt(t0.Add(time.Minute)))}
			},
			now:  t0.Add(2 * time.Minute),
			want: "Pod " + name1 + " of attempt 1 is being deleted, but node node has not reported that it stopped: its command may still run, and nothing runs again until it has",
		},
		{
			name: "disrupted on a node that has not reported it stopped",
			at:   newAt(recorded(cnatv1beta1.PhaseRunning, 1)),
			pods: func(g Gomega) []corev1.Pod {
				return []corev1.Pod{podOf(g, at, 1, t0, running, disrupted("DeletionByTaintManager"), deletedAt(t0.Add(time.Minute)))}
			},
			now:  t0.Add(2 * time.Minute),
			want: "Pod " + name1 + " of attempt 1 was disrupted (DeletionByTaintManager), but node node has not reported that it stopped: its command may still run, and nothing runs again until it has",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			d := lifecycle.Decide(tc.at, tc.pods(g), tc.now)
			g.Expect(d.Status).NotTo(BeNil())
			g.Expect(d.Status.Message).To(Equal(tc.want))
		})
	}
}

// TestCreatePodForecastsTheStatus: the status of a decision to create a Pod
// is the status the At reports once that Pod exists (Decision.Status), for
// a first attempt and for a retry: same attempt, Pod, phase, reason,
// message, conditions, and a startTime that is the first attempt's.
func TestCreatePodForecastsTheStatus(t *testing.T) {
	g := NewWithT(t)
	expectForecast := func(at *cnatv1beta1.At, pods []corev1.Pod, now time.Time) {
		d := lifecycle.Decide(at, pods, now)
		g.Expect(d.Action).To(Equal(lifecycle.CreatePod))
		created := podOf(g, at, d.Attempt, now)
		g.Expect(lifecycle.Decide(at, append(pods, created), now).Status).To(BeComparableTo(d.Status))
	}

	// The first attempt.
	at := newAt(backoffLimit(1))
	expectForecast(at, nil, t0.Add(3*time.Second))

	// Its Pod failed; the status written then says when the retry comes.
	at.Status = cnatv1beta1.AtStatus{Attempts: 1, StartTime: ptr.To(metav1.NewTime(t0.Add(3 * time.Second)))}
	pods := []corev1.Pod{podOf(g, at, 1, t0.Add(3*time.Second), exitedOnNode(1, t0.Add(10*time.Second)))}
	d := lifecycle.Decide(at, pods, t0.Add(11*time.Second))
	g.Expect(d.Status.Reason).To(Equal(cnatv1beta1.ReasonRetrying))
	at.Status = *d.Status
	// The retry: a second attempt, the first attempt's startTime.
	expectForecast(at, pods, d.Until)
}

// TestStartTime: status.startTime is when the first attempt's Pod was
// created, read from that Pod when the status has none yet, and never
// moved by a later attempt — not even once the first attempt's Pod is gone.
func TestStartTime(t *testing.T) {
	g := NewWithT(t)
	at := newAt()
	// The controller created the Pod and stopped before it wrote the status.
	d := lifecycle.Decide(at, []corev1.Pod{podOf(g, at, 1, t0.Add(2*time.Second), running)}, t0.Add(time.Minute))
	g.Expect(d.Status.StartTime).To(Equal(ptr.To(metav1.NewTime(t0.Add(2 * time.Second)))))

	// Attempt 2 runs; attempt 1's Pod was released and deleted.
	second := newAt(recorded(cnatv1beta1.PhaseRunning, 2), backoffLimit(1), func(a *cnatv1beta1.At) {
		a.Status.StartTime = ptr.To(metav1.NewTime(t0.Add(2 * time.Second)))
	})
	d = lifecycle.Decide(second, []corev1.Pod{podOf(g, second, 2, t0.Add(time.Minute), running)}, t0.Add(2*time.Minute))
	g.Expect(d.Status.Attempts).To(Equal(int32(2)))
	g.Expect(d.Status.StartTime).To(Equal(ptr.To(metav1.NewTime(t0.Add(2 * time.Second)))))
}

// TestMessageAtTheBoundIsKeptWhole: a message of exactly the length the
// CRD's schema allows is stored as it is; only a longer one is cut.
func TestMessageAtTheBoundIsKeptWhole(t *testing.T) {
	g := NewWithT(t)
	at := newAt(recorded(cnatv1beta1.PhaseRunning, 1))
	prefix := "Pod " + atpod.PodName(at, 1) + " failed with exit code 2: "
	for _, length := range []int{cnatv1beta1.MaxMessageLength, cnatv1beta1.MaxMessageLength + 1} {
		want := prefix + strings.Repeat("é", length-utf8.RuneCountInString(prefix))
		pod := podOf(g, at, 1, t0, exited(2, t0.Add(time.Second)), func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].State.Terminated.Message = strings.TrimPrefix(want, prefix)
		})
		d := lifecycle.Decide(at, []corev1.Pod{pod}, t0.Add(2*time.Second))
		if length == cnatv1beta1.MaxMessageLength {
			g.Expect(d.Status.Message).To(Equal(want), "at the bound")
		} else {
			g.Expect(d.Status.Message).To(HaveSuffix(" ... (truncated)"), "past the bound")
			g.Expect(utf8.RuneCountInString(d.Status.Message)).To(Equal(cnatv1beta1.MaxMessageLength))
		}
	}
}

// TestEventNotes: an Event's note is the status message, whole when it
// fits the 1024 bytes the events.k8s.io/v1 API takes, else cut at a
// character boundary with the cut said.
func TestEventNotes(t *testing.T) {
	tests := []struct{ name, message, want string }{
		{"1024 bytes: whole", strings.Repeat("x", 1024), strings.Repeat("x", 1024)},
		{"cut between characters", "x" + strings.Repeat("é", 1000), "x" + strings.Repeat("é", 503) + " ... (truncated)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			before := &cnatv1beta1.AtStatus{Phase: cnatv1beta1.PhaseRunning, Reason: cnatv1beta1.ReasonRunning, Attempts: 1}
			after := &cnatv1beta1.AtStatus{Phase: cnatv1beta1.PhaseFailed, Reason: cnatv1beta1.ReasonError, Attempts: 1, Message: tc.message}
			events := lifecycle.Events(before, after)
			g.Expect(events).To(HaveLen(1))
			g.Expect(events[0].Note).To(Equal(tc.want))
		})
	}
}

// TestInvalidSpecEvents: an invalid spec is announced once, and again when
// an edit brings another mistake; the same status written twice is not.
func TestInvalidSpecEvents(t *testing.T) {
	g := NewWithT(t)
	st := func(reason, message string) *cnatv1beta1.AtStatus {
		return &cnatv1beta1.AtStatus{Phase: cnatv1beta1.PhasePending, Reason: reason, Message: message}
	}
	scheduled := st(cnatv1beta1.ReasonScheduled, "Runs at 2026-11-21T09:00:00Z")
	badZone := st(cnatv1beta1.ReasonInvalidSpec, `spec.timeZone: Invalid value: "Europe/Berln": unknown time zone`)
	badSchedule := st(cnatv1beta1.ReasonInvalidSpec, `spec.schedule: Invalid value: "tomorrow": must be an RFC 3339 time`)

	g.Expect(lifecycle.Events(scheduled, badZone)).To(BeComparableTo([]lifecycle.Event{{Type: corev1.EventTypeWarning, Reason: cnatv1beta1.ReasonInvalidSpec, Note: badZone.Message}}))
	g.Expect(lifecycle.Events(badZone, badZone)).To(BeEmpty(), "written twice, announced once")
	g.Expect(lifecycle.Events(badZone, badSchedule)).To(BeComparableTo([]lifecycle.Event{{Type: corev1.EventTypeWarning, Reason: cnatv1beta1.ReasonInvalidSpec, Note: badSchedule.Message}}))
}
