package v1alpha1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// ConversionDataAnnotation is the annotation in which a v1alpha1 At keeps,
// as JSON, everything of its v1beta1 form that v1alpha1 has no field for, so
// that writing the object back through v1alpha1 loses nothing. Only the
// conversion writes and reads it, and it only ever appears on v1alpha1
// objects: converting to v1beta1 takes it off. Its format is described in
// the package documentation.
const ConversionDataAnnotation = "cnat.programming-kubernetes.info/conversion-data"

var _ conversion.Convertible = &At{}

// conversionData is the value of ConversionDataAnnotation: what a v1beta1 At
// holds beyond the v1alpha1 fields. Every field is left out when it has
// nothing to keep, and an annotation with nothing to keep is not written.
type conversionData struct {
	// Spec holds the v1beta1 spec fields other than schedule and command,
	// which v1alpha1 carries itself.
	Spec *conversionSpec `json:"spec,omitempty"`

	// Status is the v1beta1 status. Its phase is left out when the
	// v1alpha1 phase gives it back (Pending, Running, Succeeded); it is kept
	// when it does not (Failed and Missed are both DONE in v1alpha1).
	Status *cnatv1beta1.AtStatus `json:"status,omitempty"`

	// Annotation is the value the v1beta1 object itself has under
	// ConversionDataAnnotation, if any. The key is the conversion's only on
	// v1alpha1 objects; on v1beta1 it is an annotation like any other, kept
	// here while the v1alpha1 form uses the key.
	Annotation *string `json:"annotation,omitempty"`
}

// conversionSpec is the part of the v1beta1 AtSpec that v1alpha1 has no
// field for. It must name every field of v1beta1.AtSpec but Schedule and
// Command; TestConversionSpecCoversHub checks that.
type conversionSpec struct {
	TimeZone                *string                 `json:"timeZone,omitempty"`
	Template                *corev1.PodTemplateSpec `json:"template,omitempty"`
	StartingDeadlineSeconds *int64                  `json:"startingDeadlineSeconds,omitempty"`
	Suspend                 *bool                   `json:"suspend,omitempty"`
	ActiveDeadlineSeconds   *int64                  `json:"activeDeadlineSeconds,omitempty"`
	BackoffLimit            *int32                  `json:"backoffLimit,omitempty"`
	TTLSecondsAfterFinished *int32                  `json:"ttlSecondsAfterFinished,omitempty"`
}

// ConvertTo converts this v1alpha1 At to the hub version, v1beta1.
//
// Schedule and command are copied. The phase maps PENDING to Pending,
// RUNNING to Running and DONE to Succeeded; other values are copied as they
// are. When the At carries ConversionDataAnnotation (it was read through
// v1alpha1), the v1beta1 fields it holds are restored first and the
// annotation is taken off; schedule and command are then always the
// v1alpha1 ones (they may have been edited through v1alpha1), and the phase
// kept in the annotation is restored only while the v1alpha1 phase is still
// the one it maps to. An annotation that cannot be read (not JSON, not of
// this form, or with nothing in it) is not an error: it stays on the v1beta1
// object as an ordinary annotation and the plain mapping applies.
func (src *At) ConvertTo(dstRaw conversion.Hub) error {
	dst, ok := dstRaw.(*cnatv1beta1.At)
	if !ok {
		return fmt.Errorf("converting v1alpha1 At to %T: the hub of At is *v1beta1.At", dstRaw)
	}

	out := cnatv1beta1.At{TypeMeta: dst.TypeMeta}
	src.ObjectMeta.DeepCopyInto(&out.ObjectMeta)

	restoredPhase := cnatv1beta1.Phase("")
	if raw, ok := src.Annotations[ConversionDataAnnotation]; ok {
		if data, ok := decodeConversionData(raw); ok {
			removeAnnotation(&out.ObjectMeta)
			if data.Annotation != nil {
				setAnnotation(&out.ObjectMeta, *data.Annotation)
			}
			if s := data.Spec; s != nil {
				out.Spec.TimeZone = s.TimeZone
				out.Spec.Template = s.Template
				out.Spec.StartingDeadlineSeconds = s.StartingDeadlineSeconds
				out.Spec.Suspend = s.Suspend
				out.Spec.ActiveDeadlineSeconds = s.ActiveDeadlineSeconds
				out.Spec.BackoffLimit = s.BackoffLimit
				out.Spec.TTLSecondsAfterFinished = s.TTLSecondsAfterFinished
			}
			if data.Status != nil {
				out.Status = *data.Status
				restoredPhase = data.Status.Phase
			}
		}
	}

	out.Spec.Schedule = src.Spec.Schedule
	out.Spec.Command = src.Spec.Command
	if restoredPhase != "" && phaseToV1alpha1(restoredPhase) == src.Status.Phase {
		out.Status.Phase = restoredPhase
	} else {
		out.Status.Phase = phaseToV1beta1(src.Status.Phase)
	}

	*dst = out
	return nil
}

// ConvertFrom converts a hub (v1beta1) At to this version, v1alpha1.
//
// Schedule and command are copied. The phase maps Pending to PENDING,
// Running to RUNNING, and Succeeded, Failed and Missed to DONE; other values
// are copied as they are. Everything else, the other spec fields and the
// status, is kept in ConversionDataAnnotation (see conversionData), so that
// ConvertTo gives back the same v1beta1 object. When there is nothing to
// keep, the annotation is not written.
func (dst *At) ConvertFrom(srcRaw conversion.Hub) error {
	src, ok := srcRaw.(*cnatv1beta1.At)
	if !ok {
		return fmt.Errorf("converting %T to v1alpha1 At: the hub of At is *v1beta1.At", srcRaw)
	}

	out := At{TypeMeta: dst.TypeMeta}
	src.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	removeAnnotation(&out.ObjectMeta)
	out.Spec.Schedule = src.Spec.Schedule
	out.Spec.Command = src.Spec.Command
	out.Status.Phase = phaseToV1alpha1(src.Status.Phase)

	var data conversionData
	spec := conversionSpec{
		TimeZone:                src.Spec.TimeZone,
		Template:                src.Spec.Template,
		StartingDeadlineSeconds: src.Spec.StartingDeadlineSeconds,
		Suspend:                 src.Spec.Suspend,
		ActiveDeadlineSeconds:   src.Spec.ActiveDeadlineSeconds,
		BackoffLimit:            src.Spec.BackoffLimit,
		TTLSecondsAfterFinished: src.Spec.TTLSecondsAfterFinished,
	}
	if spec != (conversionSpec{}) {
		data.Spec = &spec
	}
	status := src.Status
	if phaseToV1beta1(phaseToV1alpha1(status.Phase)) == status.Phase {
		status.Phase = ""
	}
	if !apiequality.Semantic.DeepEqual(status, cnatv1beta1.AtStatus{}) {
		data.Status = &status
	}
	if raw, ok := src.Annotations[ConversionDataAnnotation]; ok {
		data.Annotation = &raw
	}

	switch {
	case data == (conversionData{}):
		// Nothing v1alpha1 cannot hold: no annotation.
	case data.Spec == nil && data.Status == nil && !isConversionData(*data.Annotation):
		// Only the v1beta1 object's own annotation, which ConvertTo would
		// not read as conversion data: it stays as it is, as ConvertTo
		// keeps it.
		setAnnotation(&out.ObjectMeta, *data.Annotation)
	default:
		raw, err := encodeConversionData(&data)
		if err != nil {
			return fmt.Errorf("converting v1beta1 At %s/%s to v1alpha1: encoding annotation %s: %w", src.Namespace, src.Name, ConversionDataAnnotation, err)
		}
		setAnnotation(&out.ObjectMeta, raw)
	}

	*dst = out
	return nil
}

// phaseToV1alpha1 maps a v1beta1 phase to its v1alpha1 phase. Values outside
// the v1beta1 enum are copied.
func phaseToV1alpha1(p cnatv1beta1.Phase) string {
	switch p {
	case cnatv1beta1.PhasePending:
		return PhasePending
	case cnatv1beta1.PhaseRunning:
		return PhaseRunning
	case cnatv1beta1.PhaseSucceeded, cnatv1beta1.PhaseFailed, cnatv1beta1.PhaseMissed:
		return PhaseDone
	default:
		return string(p)
	}
}

// phaseToV1beta1 maps a v1alpha1 phase to its v1beta1 phase, DONE to
// Succeeded. Values outside the v1alpha1 enum are copied.
func phaseToV1beta1(p string) cnatv1beta1.Phase {
	switch p {
	case PhasePending:
		return cnatv1beta1.PhasePending
	case PhaseRunning:
		return cnatv1beta1.PhaseRunning
	case PhaseDone:
		return cnatv1beta1.PhaseSucceeded
	default:
		return cnatv1beta1.Phase(p)
	}
}

// encodeConversionData writes the value of ConversionDataAnnotation:
// compact JSON, with <, > and & as they are (they are common in commands).
func encodeConversionData(data *conversionData) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(data); err != nil {
		return "", err
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// decodeConversionData reads the value of ConversionDataAnnotation. It
// reports false when the value is not a JSON object of the conversionData
// form or holds nothing to restore: such a value, which a user may well have
// written, is not conversion data. Unknown fields are ignored, so that data
// written by another release of cnat is read as far as it is understood.
func decodeConversionData(raw string) (conversionData, bool) {
	var data conversionData
	if err := json.Unmarshal([]byte(raw), &data); err != nil {
		return conversionData{}, false
	}
	if data.Spec != nil && *data.Spec == (conversionSpec{}) {
		data.Spec = nil
	}
	if data.Status != nil && apiequality.Semantic.DeepEqual(*data.Status, cnatv1beta1.AtStatus{}) {
		data.Status = nil
	}
	if data == (conversionData{}) {
		return conversionData{}, false
	}
	return data, true
}

// isConversionData reports whether ConvertTo reads raw as conversion data.
func isConversionData(raw string) bool {
	_, ok := decodeConversionData(raw)
	return ok
}

func setAnnotation(meta *metav1.ObjectMeta, value string) {
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[ConversionDataAnnotation] = value
}

func removeAnnotation(meta *metav1.ObjectMeta) {
	if _, ok := meta.Annotations[ConversionDataAnnotation]; !ok {
		return
	}
	delete(meta.Annotations, ConversionDataAnnotation)
	if len(meta.Annotations) == 0 {
		meta.Annotations = nil
	}
}
