package lifecycle_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/atpod"
	"github.com/programming-kubernetes/cnat/internal/lifecycle"
)

// scriptedEffects are Effects over a cache and an API server that answer
// as scripted, and that log every read afresh and every write in order.
type scriptedEffects struct {
	cachedAt   *cnatv1beta1.At
	cachedPods []corev1.Pod
	freshAt    *cnatv1beta1.At
	freshPods  []corev1.Pod
	// refusal is the API server's answer to a Pod create; nil creates it.
	refusal *lifecycle.Refusal

	log     []string
	written []*cnatv1beta1.AtStatus
}

func (e *scriptedEffects) CachedAt() (*cnatv1beta1.At, error) { return e.cachedAt, nil }
func (e *scriptedEffects) CachedPods() ([]corev1.Pod, error)  { return e.cachedPods, nil }
func (e *scriptedEffects) FreshPods() ([]corev1.Pod, error) {
	e.log = append(e.log, "read Pods")
	return e.freshPods, nil
}
func (e *scriptedEffects) DeleteAt(at *cnatv1beta1.At) error {
	e.log = append(e.log, "delete "+at.Name)
	return nil
}
func (e *scriptedEffects) Release(pod *corev1.Pod) error {
	e.log = append(e.log, "release "+pod.Name)
	return nil
}
func (e *scriptedEffects) FreshAt(*cnatv1beta1.At, lifecycle.Decision) (*cnatv1beta1.At, error) {
	e.log = append(e.log, "read At")
	return e.freshAt, nil
}

func (e *scriptedEffects) CreatePod(_ *cnatv1beta1.At, d lifecycle.Decision) (*lifecycle.Refusal, error) {
	e.log = append(e.log, fmt.Sprintf("create Pod of attempt %d", d.Attempt))
	return e.refusal, nil
}

func (e *scriptedEffects) WriteStatus(_ *cnatv1beta1.At, status *cnatv1beta1.AtStatus) error {
	e.log = append(e.log, fmt.Sprintf("status %s/%s", status.Phase, status.Reason))
	e.written = append(e.written, status)
	return nil
}

// TestReconcile checks Reconcile's own part, which the model test cannot
// see (it reconciles at every step, whatever Reconcile returns): what is
// read afresh, the order of the writes, and when the At is looked at again
// (Until), stalled or retried (the error).
func TestReconcile(t *testing.T) {
	at := newAt()
	oldAt := newAt(func(a *cnatv1beta1.At) { a.UID = oldUID })
	quota := errors.New(`pods "job-7f3c1a52-1" is forbidden: exceeded quota: pods`)
	finished := func(ttl int32) *cnatv1beta1.At {
		return newAt(recorded(cnatv1beta1.PhaseSucceeded, 2), backoffLimit(1), func(a *cnatv1beta1.At) {
			a.Status.Reason = cnatv1beta1.ReasonCompleted
			a.Status.CompletionTime = ptr.To(metav1.NewTime(t0.Add(time.Minute)))
			a.Spec.TTLSecondsAfterFinished = ptr.To(ttl)
		})
	}
	tests := []struct {
		name    string
		effects func(g Gomega) *scriptedEffects
		now     time.Time
		log     []string
		want    lifecycle.Result
		wantErr error
	}{
		{
			name:    "not due: the status says when it runs, and it is looked at again then",
			effects: func(Gomega) *scriptedEffects { return &scriptedEffects{cachedAt: at, freshAt: at} },
			now:     t0.Add(-time.Hour),
			log:     []string{"status Pending/Scheduled"},
			want:    lifecycle.Result{Until: t0},
		},
		{
			name: "an invalid schedule: said, and stalled until the spec changes",
			effects: func(Gomega) *scriptedEffects {
				invalid := newAt(func(a *cnatv1beta1.At) { a.Spec.Schedule = "tomorrow" })
				return &scriptedEffects{cachedAt: invalid, freshAt: invalid}
			},
			now: t0,
			log: []string{"status Pending/InvalidSpec"},
		},
		{
			name: "finished, its TTL not up: the Pods released after the status, looked at again at the TTL",
			effects: func(g Gomega) *scriptedEffects {
				a := finished(60)
				return &scriptedEffects{cachedAt: a, cachedPods: []corev1.Pod{podOf(g, a, 2, t0.Add(20*time.Second), exited(0, t0))}}
			},
			now:  t0.Add(90 * time.Second),
			log:  []string{"status Succeeded/Completed", "release " + atpod.PodName(at, 2)},
			want: lifecycle.Result{Until: t0.Add(2 * time.Minute)},
		},
		{
			name: "finished, its TTL up: status, Pods released, At deleted, in that order",
			effects: func(g Gomega) *scriptedEffects {
				a := finished(0)
				return &scriptedEffects{cachedAt: a, cachedPods: []corev1.Pod{
					podOf(g, a, 1, t0, exited(1, t0), released), podOf(g, a, 2, t0.Add(20*time.Second), exited(0, t0)),
				}}
			},
			now: t0.Add(90 * time.Second),
			log: []string{"status Succeeded/Completed", "release " + atpod.PodName(at, 2), "delete job"},
		},
		{
			name: "a refused Pod: the refusal is the status at once, an earlier incarnation's Pod released all the same, and retried",
			effects: func(g Gomega) *scriptedEffects {
				return &scriptedEffects{
					cachedAt: at, freshAt: at,
					cachedPods: []corev1.Pod{podOf(g, oldAt, 1, t0.Add(-time.Hour), exited(0, t0.Add(-time.Hour)))},
					refusal:    &lifecycle.Refusal{Reason: cnatv1beta1.ReasonPodForbidden, Err: quota},
				}
			},
			now:     t0,
			log:     []string{"read At", "create Pod of attempt 1", "status Pending/PodForbidden", "release " + atpod.PodName(oldAt, 1)},
			wantErr: quota,
		},
		{
			name: "the cache lags: the At read afresh records a Pod the cache does not show, so the Pods are read afresh too, and the Pod is reported, not run again",
			effects: func(g Gomega) *scriptedEffects {
				fresh := newAt(recorded(cnatv1beta1.PhasePending, 1))
				return &scriptedEffects{cachedAt: at, freshAt: fresh, freshPods: []corev1.Pod{podOf(g, fresh, 1, t0, running)}}
			},
			now: t0.Add(time.Second),
			log: []string{"read At", "read Pods", "status Running/Running"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			e := tc.effects(g)
			result, err := lifecycle.Reconcile(e, tc.now)
			if tc.wantErr != nil {
				g.Expect(err).To(MatchError(tc.wantErr))
			} else {
				g.Expect(err).NotTo(HaveOccurred())
			}
			g.Expect(e.log).To(BeComparableTo(tc.log))
			g.Expect(result.Until).To(BeTemporally("==", tc.want.Until))
			if strings.HasSuffix(tc.log[len(tc.log)-1], "/"+cnatv1beta1.ReasonInvalidSpec) {
				g.Expect(result.Stalled).To(MatchError(ContainSubstring("spec.schedule")))
			} else {
				g.Expect(result.Stalled).NotTo(HaveOccurred())
			}
		})
	}
}

// TestRefusalAtTheFirstLook: an At whose Pod is refused before any status
// was written reports Pending with its scheduled time and the refusal.
func TestRefusalAtTheFirstLook(t *testing.T) {
	g := NewWithT(t)
	at := newAt()
	e := &scriptedEffects{cachedAt: at, freshAt: at, refusal: &lifecycle.Refusal{
		Reason: cnatv1beta1.ReasonPodForbidden, Message: "exceeded quota: pods", Err: errors.New("forbidden"),
	}}
	_, err := lifecycle.Reconcile(e, t0)
	g.Expect(err).To(MatchError("forbidden"))
	g.Expect(e.written).To(HaveLen(1))
	st := e.written[0]
	g.Expect(st.Phase).To(Equal(cnatv1beta1.PhasePending))
	g.Expect(st.Reason).To(Equal(cnatv1beta1.ReasonPodForbidden))
	g.Expect(st.Message).To(Equal("exceeded quota: pods"))
	g.Expect(st.ScheduledTime).To(Equal(ptr.To(metav1.NewTime(t0))))
	g.Expect(st.Attempts).To(BeZero(), "the refused attempt did not start")
}
