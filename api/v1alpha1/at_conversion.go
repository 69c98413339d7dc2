package v1alpha1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
	sigsjson "sigs.k8s.io/json"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// ConversionDataAnnotation is the annotation in which a v1alpha1 At carries
// spec.template, the one v1beta1 field v1alpha1 has no field for, as
// {"template":{...}} (see the package documentation). The key is reserved
// for the conversion: a v1beta1 At's own value under it is dropped.
const ConversionDataAnnotation = "cnat.programming-kubernetes.info/conversion-data"

// TemplateTooLargeLabel marks the v1alpha1 form of an At whose template
// does not fit beside its other annotations (see TotalAnnotationSizeLimit):
// its value is the size the annotation would have had, in bytes. Such an At
// can be read, but not written, through v1alpha1. The key is reserved for
// the conversion, as is ConversionDataAnnotation.
const TemplateTooLargeLabel = "cnat.programming-kubernetes.info/template-too-large"

// TotalAnnotationSizeLimit is the API server's limit on the size of all
// annotations of one object together (the lengths of keys and values):
// k8s.io/apimachinery's apimachineryvalidation.TotalAnnotationSizeLimitB.
// The v1alpha1 form of an At whose annotations exceed it could not be
// served, so the conversion refuses to carry a template that would.
const TotalAnnotationSizeLimit = 256 * 1024

var _ conversion.Convertible = &At{}

// conversionData is the value of ConversionDataAnnotation.
type conversionData struct {
	// Template is the v1beta1 spec.template.
	Template *corev1.PodTemplateSpec `json:"template,omitempty"`
}

// annotationPath is the field path of ConversionDataAnnotation in errors.
var annotationPath = field.NewPath("metadata", "annotations").Key(ConversionDataAnnotation)

// ConvertTo converts this v1alpha1 At to the hub version, v1beta1.
//
// Every spec and status field is copied; status.phase maps PENDING to
// Pending, RUNNING to Running and DONE to status.outcome (Succeeded when it
// is empty). The template is read from ConversionDataAnnotation, strictly:
// an annotation that is not exactly {"template":{...}} with a Pod template
// in it (unknown or duplicate fields, wrong types, a quantity that does not
// parse, trailing data) is an error that names the field, so the annotation
// cannot carry anything the v1beta1 API would refuse by its schema. So is a
// spec with neither command nor template.
func (src *At) ConvertTo(dstRaw conversion.Hub) error {
	dst, ok := dstRaw.(*cnatv1beta1.At)
	if !ok {
		return fmt.Errorf("converting v1alpha1 At to %T: the hub of At is *v1beta1.At", dstRaw)
	}
	out := cnatv1beta1.At{TypeMeta: dst.TypeMeta}
	src.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	removeReserved(&out.ObjectMeta)

	if size, ok := src.Labels[TemplateTooLargeLabel]; ok {
		return fmt.Errorf("converting v1alpha1 At %s/%s to v1beta1: %w", src.Namespace, src.Name,
			field.Forbidden(field.NewPath("metadata", "labels").Key(TemplateTooLargeLabel),
				fmt.Sprintf("the template of this At (%s bytes) does not fit beside its annotations (at most %d bytes together), so v1alpha1 cannot carry it: write this At through v1beta1", size, TotalAnnotationSizeLimit)))
	}
	if raw, ok := src.Annotations[ConversionDataAnnotation]; ok {
		if size := annotationsSize(src.Annotations); size > TotalAnnotationSizeLimit {
			return fmt.Errorf("converting v1alpha1 At %s/%s to v1beta1: %w", src.Namespace, src.Name,
				field.TooLong(annotationPath, field.OmitValueType{}, TotalAnnotationSizeLimit))
		}
		template, err := DecodeConversionData(raw)
		if err != nil {
			return fmt.Errorf("converting v1alpha1 At %s/%s to v1beta1: %w", src.Namespace, src.Name, err)
		}
		out.Spec.Template = template
	}
	s := src.Spec.DeepCopy()
	out.Spec.Schedule = s.Schedule
	out.Spec.TimeZone = s.TimeZone
	out.Spec.Command = s.Command
	out.Spec.StartingDeadlineSeconds = s.StartingDeadlineSeconds
	out.Spec.Suspend = s.Suspend
	out.Spec.ActiveDeadlineSeconds = s.ActiveDeadlineSeconds
	out.Spec.BackoffLimit = s.BackoffLimit
	out.Spec.TTLSecondsAfterFinished = s.TTLSecondsAfterFinished
	if out.Spec.Command == "" && out.Spec.Template == nil && src.DeletionTimestamp == nil {
		return fmt.Errorf("converting v1alpha1 At %s/%s to v1beta1: %w", src.Namespace, src.Name,
			field.Required(field.NewPath("spec", "command"), "spec.command or spec.template (in the annotation "+ConversionDataAnnotation+") must be set"))
	}

	st := src.Status.DeepCopy()
	out.Status = cnatv1beta1.AtStatus{
		Phase:              phaseToV1beta1(st.Phase, st.Outcome),
		ObservedGeneration: st.ObservedGeneration,
		ScheduledTime:      st.ScheduledTime,
		StartTime:          st.StartTime,
		CompletionTime:     st.CompletionTime,
		PodName:            st.PodName,
		Attempts:           st.Attempts,
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
// Every spec and status field is copied; the phase maps Pending to PENDING,
// Running to RUNNING, and Succeeded, Failed and Missed to DONE with the
// v1beta1 phase in status.outcome. The template goes to
// ConversionDataAnnotation; when the annotation would not fit the size limit
// beside the At's other annotations, TemplateTooLargeLabel is set instead
// (and ConvertTo refuses the At), so that reading the At never fails.
func (dst *At) ConvertFrom(srcRaw conversion.Hub) error {
	src, ok := srcRaw.(*cnatv1beta1.At)
	if !ok {
		return fmt.Errorf("converting %T to v1alpha1 At: the hub of At is *v1beta1.At", srcRaw)
	}
	out := At{TypeMeta: dst.TypeMeta}
	src.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	removeReserved(&out.ObjectMeta)

	s := src.Spec.DeepCopy()
	out.Spec = AtSpec{
		Schedule:                s.Schedule,
		TimeZone:                s.TimeZone,
		Command:                 s.Command,
		StartingDeadlineSeconds: s.StartingDeadlineSeconds,
		Suspend:                 s.Suspend,
		ActiveDeadlineSeconds:   s.ActiveDeadlineSeconds,
		BackoffLimit:            s.BackoffLimit,
		TTLSecondsAfterFinished: s.TTLSecondsAfterFinished,
	}
	if s.Template != nil {
		raw, err := encode(conversionData{Template: s.Template})
		if err != nil {
			return fmt.Errorf("converting v1beta1 At %s/%s to v1alpha1: encoding spec.template: %w", src.Namespace, src.Name, err)
		}
		if annotationsSize(out.Annotations)+len(ConversionDataAnnotation)+len(raw) > TotalAnnotationSizeLimit {
			if out.Labels == nil {
				out.Labels = map[string]string{}
			}
			out.Labels[TemplateTooLargeLabel] = strconv.Itoa(len(raw))
		} else {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[ConversionDataAnnotation] = raw
		}
	}

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
		ExitCode:           st.ExitCode,
		Reason:             st.Reason,
		Message:            st.Message,
		Conditions:         st.Conditions,
	}
	*dst = out
	return nil
}

// TemplateAnnotationSize is the size, in bytes, that the v1alpha1 form of
// the At adds to its annotations for its template (key and value; 0 without
// a template). The validating webhook refuses an At whose annotations and
// this together exceed TotalAnnotationSizeLimit.
func TemplateAnnotationSize(at *cnatv1beta1.At) (int, error) {
	if at.Spec.Template == nil {
		return 0, nil
	}
	raw, err := encode(conversionData{Template: at.Spec.Template})
	if err != nil {
		return 0, err
	}
	return len(ConversionDataAnnotation) + len(raw), nil
}

// DecodeConversionData reads the value of ConversionDataAnnotation strictly
// and returns the template in it. Its errors are field.Errors whose path
// starts at the annotation and names the field inside it.
func DecodeConversionData(raw string) (*corev1.PodTemplateSpec, error) {
	var data conversionData
	strictErrs, err := sigsjson.UnmarshalStrict([]byte(raw), &data)
	if err != nil {
		return nil, field.Invalid(annotationPath, field.OmitValueType{},
			fmt.Sprintf(`must be {"template":{...}} with a Pod template (as spec.template of v1beta1): %v`, err))
	}
	if len(strictErrs) > 0 {
		msgs := make([]string, 0, len(strictErrs))
		for _, e := range strictErrs {
			msgs = append(msgs, e.Error())
		}
		return nil, field.Invalid(annotationPath, field.OmitValueType{},
			fmt.Sprintf(`must be {"template":{...}} with only the fields of a Pod template (as spec.template of v1beta1): %s`, strings.Join(msgs, "; ")))
	}
	if data.Template == nil {
		return nil, field.Required(annotationPath.Child("template"), `the annotation carries spec.template, as {"template":{...}}; remove the annotation for an At without a template`)
	}
	return data.Template, nil
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

// encode writes compact JSON with <, > and & as they are (they are common in
// shell lines and environment values).
func encode(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// annotationsSize is the size the API server counts for annotations.
func annotationsSize(annotations map[string]string) int {
	n := 0
	for k, v := range annotations {
		n += len(k) + len(v)
	}
	return n
}

func removeReserved(meta *metav1.ObjectMeta) {
	if _, ok := meta.Labels[TemplateTooLargeLabel]; ok {
		delete(meta.Labels, TemplateTooLargeLabel)
		if len(meta.Labels) == 0 {
			meta.Labels = nil
		}
	}
	if _, ok := meta.Annotations[ConversionDataAnnotation]; !ok {
		return
	}
	delete(meta.Annotations, ConversionDataAnnotation)
	if len(meta.Annotations) == 0 {
		meta.Annotations = nil
	}
}
