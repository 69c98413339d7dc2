package v1alpha1

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/conversion"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// FormerTemplateAnnotation is the annotation in which the v1alpha1 form of
// an At carried spec.template before v1alpha1 had the field. It is an
// ordinary annotation now, which the conversion copies like any other; the
// validating webhook refuses it on a write that validates the spec, so that
// a manifest written for the former form fails loudly instead of losing its
// template.
const FormerTemplateAnnotation = "cnat.programming-kubernetes.info/conversion-data"

var _ conversion.Convertible = &At{}

// ConvertTo converts this v1alpha1 At to the hub version, v1beta1.
//
// Metadata and every spec and status field are copied; status.phase maps
// PENDING to Pending, RUNNING to Running and DONE to status.outcome
// (Succeeded when it is empty). It cannot fail on an At: what the v1alpha1
// schema admits, the v1beta1 schema admits.
func (src *At) ConvertTo(dstRaw conversion.Hub) error {
	dst, ok := dstRaw.(*cnatv1beta1.At)
	if !ok {
		return fmt.Errorf("converting v1alpha1 At to %T: the hub of At is *v1beta1.At", dstRaw)
	}
	out := cnatv1beta1.At{TypeMeta: dst.TypeMeta}
	src.ObjectMeta.DeepCopyInto(&out.ObjectMeta)

	// The two specs have the same fields in the same order: the conversion
	// is Go's, and a field added to one version only does not compile.
	out.Spec = cnatv1beta1.AtSpec(*src.Spec.DeepCopy())

	st := src.Status.DeepCopy()
	out.Status = cnatv1beta1.AtStatus{
		Phase:              phaseToV1beta1(st.Phase, st.Outcome),
		ObservedGeneration: st.ObservedGeneration,
		ScheduledTime:      st.ScheduledTime,
		StartTime:          st.StartTime,
		CompletionTime:     st.CompletionTime,
		PodName:            st.PodName,
		Attempts:           st.Attempts,
		UnstartedAttempts:  st.UnstartedAttempts,
		RetryTime:          st.RetryTime,
		ExitCode:           st.ExitCode,
		Reason:             st.Reason,
		Message:            st.Message,
		Conditions:         st.Conditions,
	}
	*dst = out
	return nil
}

// ConvertFrom converts a hub (v1beta1) At to this version, v1alpha1.
//
// Metadata and every spec and status field are copied; the phase maps
// Pending to PENDING, Running to RUNNING, and Succeeded, Failed and Missed
// to DONE with the v1beta1 phase in status.outcome.
func (dst *At) ConvertFrom(srcRaw conversion.Hub) error {
	src, ok := srcRaw.(*cnatv1beta1.At)
	if !ok {
		return fmt.Errorf("converting %T to v1alpha1 At: the hub of At is *v1beta1.At", srcRaw)
	}
	out := At{TypeMeta: dst.TypeMeta}
	src.ObjectMeta.DeepCopyInto(&out.ObjectMeta)

	out.Spec = AtSpec(*src.Spec.DeepCopy())

	st := src.Status.DeepCopy()
	phase, outcome := phaseToV1alpha1(st.Phase)
	out.Status = AtStatus{
		Phase:              phase,
		Outcome:            outcome,
		ObservedGeneration: st.ObservedGeneration,
		ScheduledTime:      st.ScheduledTime,
		StartTime:          st.StartTime,
		CompletionTime:     st.CompletionTime,
		PodName:            st.PodName,
		Attempts:           st.Attempts,
		UnstartedAttempts:  st.UnstartedAttempts,
		RetryTime:          st.RetryTime,
		ExitCode:           st.ExitCode,
		Reason:             st.Reason,
		Message:            st.Message,
		Conditions:         st.Conditions,
	}
	*dst = out
	return nil
}

// phaseToV1alpha1 maps a v1beta1 phase to its v1alpha1 phase and outcome.
func phaseToV1alpha1(p cnatv1beta1.Phase) (phase, outcome string) {
	switch p {
	case cnatv1beta1.PhasePending:
		return PhasePending, ""
	case cnatv1beta1.PhaseRunning:
		return PhaseRunning, ""
	case cnatv1beta1.PhaseSucceeded, cnatv1beta1.PhaseFailed, cnatv1beta1.PhaseMissed:
		return PhaseDone, string(p)
	default:
		return string(p), ""
	}
}

// phaseToV1beta1 maps a v1alpha1 phase and outcome to the v1beta1 phase: DONE
// is its outcome, Succeeded when it has none.
func phaseToV1beta1(phase, outcome string) cnatv1beta1.Phase {
	switch phase {
	case PhasePending:
		return cnatv1beta1.PhasePending
	case PhaseRunning:
		return cnatv1beta1.PhaseRunning
	case PhaseDone:
		if outcome == "" {
			return cnatv1beta1.PhaseSucceeded
		}
		return cnatv1beta1.Phase(outcome)
	default:
		return cnatv1beta1.Phase(phase)
	}
}
