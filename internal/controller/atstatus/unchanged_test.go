package atstatus_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/programming-kubernetes/cnat/api/applyconfiguration"
	atac "github.com/programming-kubernetes/cnat/api/applyconfiguration/api/v1beta1"
	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/controller/atstatus"
)

func newScheme(g Gomega) *runtime.Scheme {
	scheme := runtime.NewScheme()
	g.ExpectWithOffset(1, cnatv1beta1.AddToScheme(scheme)).To(Succeed(), "registering the cnat types")
	return scheme
}

func newTypeConverter(g Gomega) managedfields.TypeConverter {
	return applyconfiguration.NewTypeConverter(newScheme(g))
}

func TestUnchanged(t *testing.T) {
	// base is 10:00:00 UTC; the others differ from it below the second, or
	// by a whole second.
	base := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	subSecond := base.Add(750 * time.Millisecond)
	nextSecond := base.Add(time.Second)

	status := func() *atac.AtStatusApplyConfiguration { return atac.AtStatus() }
	at := func(s *atac.AtStatusApplyConfiguration) *atac.AtApplyConfiguration {
		return atac.At("hello", "jobs").WithStatus(s)
	}
	condition := func(typ string, st metav1.ConditionStatus, reason string, when time.Time) *metav1ac.ConditionApplyConfiguration {
		return metav1ac.Condition().
			WithType(typ).
			WithStatus(st).
			WithReason(reason).
			WithMessage(reason + " message").
			WithObservedGeneration(3).
			WithLastTransitionTime(metav1.NewTime(when))
	}
	running := func() *atac.AtStatusApplyConfiguration {
		return status().
			WithPhase(cnatv1beta1.PhaseRunning).
			WithObservedGeneration(3).
			WithScheduledTime(metav1.NewTime(base)).
			WithStartTime(metav1.NewTime(base)).
			WithPodName("hello-1").
			WithAttempts(1).
			WithReason(cnatv1beta1.ReasonRunning).
			WithMessage("Pod hello-1 runs").
			WithConditions(
				condition(cnatv1beta1.ConditionReady, metav1.ConditionFalse, cnatv1beta1.ReasonRunning, base),
				condition(cnatv1beta1.ConditionReconciling, metav1.ConditionTrue, cnatv1beta1.ReasonRunning, base),
				condition(cnatv1beta1.ConditionStalled, metav1.ConditionFalse, cnatv1beta1.ReasonRunning, base),
			)
	}

	tests := []struct {
		name           string
		desired, owned *atac.AtApplyConfiguration
		want           bool
	}{
		{
			name:    "identical",
			desired: at(running()),
			owned:   at(running()),
			want:    true,
		},
		{
			name:    "identical, phase only",
			desired: at(status().WithPhase(cnatv1beta1.PhasePending)),
			owned:   at(status().WithPhase(cnatv1beta1.PhasePending)),
			want:    true,
		},
		{
			name:    "identical, no status",
			desired: atac.At("hello", "jobs"),
			owned:   atac.At("hello", "jobs"),
			want:    true,
		},
		{
			name:    "phase changed",
			desired: at(running().WithPhase(cnatv1beta1.PhaseSucceeded)),
			owned:   at(running()),
			want:    false,
		},
		{
			name:    "phase changed, phase only",
			desired: at(status().WithPhase(cnatv1beta1.PhaseRunning)),
			owned:   at(status().WithPhase(cnatv1beta1.PhasePending)),
			want:    false,
		},
		{
			name:    "field in desired only",
			desired: at(running().WithExitCode(0)),
			owned:   at(running()),
			want:    false,
		},
		{
			name:    "field in owned only",
			desired: at(status().WithPhase(cnatv1beta1.PhasePending)),
			owned:   at(status().WithPhase(cnatv1beta1.PhasePending).WithMessage("waiting")),
			want:    false,
		},
		{
			name:    "status in desired only",
			desired: at(status().WithPhase(cnatv1beta1.PhasePending)),
			owned:   atac.At("hello", "jobs"),
			want:    false,
		},
		{
			name: "condition in desired only",
			desired: at(running().WithConditions(
				condition(cnatv1beta1.ConditionSucceeded, metav1.ConditionFalse, cnatv1beta1.ReasonRunning, base))),
			owned: at(running()),
			want:  false,
		},
		{
			// conditions is a list map keyed by type: structured-merge-diff
			// compares its items by key, not by position.
			name: "conditions reordered, same content",
			desired: at(status().WithPhase(cnatv1beta1.PhaseRunning).WithConditions(
				condition(cnatv1beta1.ConditionStalled, metav1.ConditionFalse, cnatv1beta1.ReasonRunning, base),
				condition(cnatv1beta1.ConditionReady, metav1.ConditionFalse, cnatv1beta1.ReasonRunning, base),
				condition(cnatv1beta1.ConditionReconciling, metav1.ConditionTrue, cnatv1beta1.ReasonRunning, base),
			)),
			owned: at(status().WithPhase(cnatv1beta1.PhaseRunning).WithConditions(
				condition(cnatv1beta1.ConditionReady, metav1.ConditionFalse, cnatv1beta1.ReasonRunning, base),
				condition(cnatv1beta1.ConditionReconciling, metav1.ConditionTrue, cnatv1beta1.ReasonRunning, base),
				condition(cnatv1beta1.ConditionStalled, metav1.ConditionFalse, cnatv1beta1.ReasonRunning, base),
			)),
			want: true,
		},
		{
			name: "conditions reordered, one status changed",
			desired: at(status().WithConditions(
				condition(cnatv1beta1.ConditionReconciling, metav1.ConditionFalse, cnatv1beta1.ReasonCompleted, base),
				condition(cnatv1beta1.ConditionReady, metav1.ConditionTrue, cnatv1beta1.ReasonCompleted, base),
			)),
			owned: at(status().WithConditions(
				condition(cnatv1beta1.ConditionReady, metav1.ConditionTrue, cnatv1beta1.ReasonCompleted, base),
				condition(cnatv1beta1.ConditionReconciling, metav1.ConditionTrue, cnatv1beta1.ReasonCompleted, base),
			)),
			want: false,
		},
		{
			name:    "startTime differs below the second",
			desired: at(running().WithStartTime(metav1.NewTime(subSecond))),
			owned:   at(running()),
			want:    true,
		},
		{
			name:    "startTime differs by a second",
			desired: at(running().WithStartTime(metav1.NewTime(nextSecond))),
			owned:   at(running()),
			want:    false,
		},
		{
			name:    "same instant in another time zone",
			desired: at(running().WithScheduledTime(metav1.NewTime(base.In(time.FixedZone("UTC+1", 3600))))),
			owned:   at(running()),
			want:    true,
		},
		{
			name: "condition lastTransitionTime differs below the second",
			desired: at(status().WithConditions(
				condition(cnatv1beta1.ConditionReady, metav1.ConditionTrue, cnatv1beta1.ReasonScheduled, subSecond))),
			owned: at(status().WithConditions(
				condition(cnatv1beta1.ConditionReady, metav1.ConditionTrue, cnatv1beta1.ReasonScheduled, base))),
			want: true,
		},
		{
			name: "condition lastTransitionTime differs by a second",
			desired: at(status().WithConditions(
				condition(cnatv1beta1.ConditionReady, metav1.ConditionTrue, cnatv1beta1.ReasonScheduled, nextSecond))),
			owned: at(status().WithConditions(
				condition(cnatv1beta1.ConditionReady, metav1.ConditionTrue, cnatv1beta1.ReasonScheduled, base))),
			want: false,
		},
		{
			name:    "completionTime in desired only",
			desired: at(running().WithCompletionTime(metav1.NewTime(subSecond))),
			owned:   at(running()),
			want:    false,
		},
	}
	tc := newTypeConverter(NewWithT(t))
	for _, c := range tests {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(atstatus.Unchanged(tc, c.desired, c.owned)).To(Equal(c.want))
		})
	}
}

// TestUnchangedExtracted checks Unchanged against what the field manager
// owns as the generated Extract function reports it from a live At, which
// is how the controller calls it.
func TestUnchangedExtracted(t *testing.T) {
	g := NewWithT(t)
	tc := newTypeConverter(g)
	base := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

	// live is an At whose status the status field manager applied: phase,
	// podName and startTime (stored, like every metav1.Time, to the second).
	live := &cnatv1beta1.At{
		TypeMeta:   metav1.TypeMeta{APIVersion: cnatv1beta1.GroupVersion.String(), Kind: "At"},
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "jobs"},
		Spec:       cnatv1beta1.AtSpec{Schedule: "2026-11-21T10:00:00Z", Command: "date"},
		Status: cnatv1beta1.AtStatus{
			Phase:     cnatv1beta1.PhaseRunning,
			PodName:   "hello-1",
			StartTime: &metav1.Time{Time: base},
		},
	}
	live.ManagedFields = []metav1.ManagedFieldsEntry{{
		Manager:     atstatus.StatusFieldManager,
		Operation:   metav1.ManagedFieldsOperationApply,
		APIVersion:  cnatv1beta1.GroupVersion.String(),
		FieldsType:  "FieldsV1",
		Subresource: "status",
		FieldsV1:    metav1.NewFieldsV1(`{"f:status":{"f:phase":{},"f:podName":{},"f:startTime":{}}}`),
	}}
	owned, err := atac.ExtractAtStatus(live, atstatus.StatusFieldManager)
	g.Expect(err).NotTo(HaveOccurred())

	desired := func() *atac.AtStatusApplyConfiguration {
		return atac.AtStatus().
			WithPhase(cnatv1beta1.PhaseRunning).
			WithPodName("hello-1").
			WithStartTime(metav1.NewTime(base.Add(300 * time.Millisecond)))
	}
	tests := []struct {
		name    string
		desired *atac.AtApplyConfiguration
		want    bool
	}{
		{name: "same status", desired: atac.At("hello", "jobs").WithStatus(desired()), want: true},
		{name: "new phase", desired: atac.At("hello", "jobs").WithStatus(desired().WithPhase(cnatv1beta1.PhaseSucceeded)), want: false},
		{name: "new field", desired: atac.At("hello", "jobs").WithStatus(desired().WithExitCode(0)), want: false},
		{name: "field no longer applied", desired: atac.At("hello", "jobs").WithStatus(atac.AtStatus().WithPhase(cnatv1beta1.PhaseRunning).WithPodName("hello-1")), want: false},
	}
	for _, c := range tests {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(atstatus.Unchanged(tc, c.desired, owned)).To(Equal(c.want))
		})
	}
}
