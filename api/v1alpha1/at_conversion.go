package v1alpha1

import (
	"bytes"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// Convert converts obj, an At in JSON as the API server sends it to the
// conversion webhook, to apiVersion (v1alpha1 or v1beta1 of cnat's group).
//
// It rewrites apiVersion and, in status, phase and outcome (the table in
// doc.go); every other member passes through as it was sent (JSON numbers
// are never decoded, so an int64 stays exact), values of the wrong type
// included: the API server validates the result against the schema of the
// version it asked for, which names the field. It fails only on what is not
// an At of one of the two versions.
func Convert(obj []byte, apiVersion string) ([]byte, error) {
	var at map[string]json.RawMessage
	if err := json.Unmarshal(obj, &at); err != nil || at == nil {
		return nil, fmt.Errorf("converting an At to %s: not a JSON object", apiVersion)
	}
	from, _ := stringMember(at, "apiVersion")
	kind, _ := stringMember(at, "kind")
	alpha, beta := GroupVersion.String(), cnatv1beta1.GroupVersion.String()
	var status func(map[string]json.RawMessage)
	switch {
	case kind != "At":
		return nil, fmt.Errorf("converting to %s: kind %q is not At", apiVersion, kind)
	case from == apiVersion && (from == alpha || from == beta):
		return obj, nil
	case from == alpha && apiVersion == beta:
		status = statusToV1beta1
	case from == beta && apiVersion == alpha:
		status = statusToV1alpha1
	default:
		return nil, fmt.Errorf("converting At from %q to %q: At is served as %s and %s", from, apiVersion, alpha, beta)
	}
	at["apiVersion"] = jsonString(apiVersion)
	var st map[string]json.RawMessage
	if json.Unmarshal(at["status"], &st) == nil && st != nil {
		status(st)
		var err error
		if at["status"], err = encode(st); err != nil {
			return nil, err
		}
	}
	return encode(at)
}

// encode writes m, the members of a JSON object, each as it was read:
// encoding/json only drops the whitespace between tokens (and, without
// SetEscapeHTML(false), would spell <, > and & in strings as \u003c…).
func encode(m map[string]json.RawMessage) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// statusToV1beta1 maps the book's phase to v1beta1's: PENDING to Pending,
// RUNNING to Running, DONE to the outcome (Succeeded without one); any
// other phase, or one that is not a string, passes through. v1beta1 has no
// outcome.
func statusToV1beta1(st map[string]json.RawMessage) {
	phase, _ := stringMember(st, "phase")
	outcome, isString := stringMember(st, "outcome")
	switch phase {
	case PhasePending:
		st["phase"] = jsonString(string(cnatv1beta1.PhasePending))
	case PhaseRunning:
		st["phase"] = jsonString(string(cnatv1beta1.PhaseRunning))
	case PhaseDone:
		st["phase"] = st["outcome"]
		if !isString || outcome == "" {
			st["phase"] = jsonString(string(cnatv1beta1.PhaseSucceeded))
		}
	}
	delete(st, "outcome")
}

// statusToV1alpha1 maps v1beta1's phase to the book's: Pending to PENDING,
// Running to RUNNING, and Succeeded, Failed and Missed to DONE with the
// v1beta1 phase as the outcome; any other phase passes through.
func statusToV1alpha1(st map[string]json.RawMessage) {
	phase, _ := stringMember(st, "phase")
	switch cnatv1beta1.Phase(phase) {
	case cnatv1beta1.PhasePending:
		st["phase"] = jsonString(PhasePending)
	case cnatv1beta1.PhaseRunning:
		st["phase"] = jsonString(PhaseRunning)
	case cnatv1beta1.PhaseSucceeded, cnatv1beta1.PhaseFailed, cnatv1beta1.PhaseMissed:
		st["outcome"] = st["phase"]
		st["phase"] = jsonString(PhaseDone)
	}
}

// stringMember is the member name of m, if it is a JSON string.
func stringMember(m map[string]json.RawMessage, name string) (string, bool) {
	var s string
	return s, json.Unmarshal(m[name], &s) == nil
}

// jsonString is s as a JSON string (json.Marshal fails on no string).
func jsonString(s string) json.RawMessage {
	raw, _ := json.Marshal(s)
	return raw
}

var _ conversion.Convertible = &At{}

// ConvertTo converts this At to the hub version, v1beta1, through Convert:
// a Go client that holds one version gets what the API server would serve
// in the other. It also marks At as convertible, which is what has envtest
// point the CRD's conversion at the test's webhook server.
func (src *At) ConvertTo(dstRaw conversion.Hub) error {
	dst, ok := dstRaw.(*cnatv1beta1.At)
	if !ok {
		return fmt.Errorf("converting v1alpha1 At to %T: the hub of At is *v1beta1.At", dstRaw)
	}
	return convertTyped(src, GroupVersion, dst, cnatv1beta1.GroupVersion)
}

// ConvertFrom converts a hub (v1beta1) At to this version, through Convert.
func (dst *At) ConvertFrom(srcRaw conversion.Hub) error {
	src, ok := srcRaw.(*cnatv1beta1.At)
	if !ok {
		return fmt.Errorf("converting %T to v1alpha1 At: the hub of At is *v1beta1.At", srcRaw)
	}
	return convertTyped(src, cnatv1beta1.GroupVersion, dst, GroupVersion)
}

// convertTyped converts src, an At of version from, into dst, an At of
// version to, through their JSON. dst keeps its type meta, as a conversion
// of typed objects does.
func convertTyped[T any, PT interface {
	*T
	runtime.Object
}](src runtime.Object, from schema.GroupVersion, dst PT, to schema.GroupVersion) error {
	src = src.DeepCopyObject()
	src.GetObjectKind().SetGroupVersionKind(from.WithKind("At"))
	raw, err := json.Marshal(src)
	if err != nil {
		return err
	}
	if raw, err = Convert(raw, to.String()); err != nil {
		return err
	}
	var out T
	if err := json.Unmarshal(raw, &out); err != nil {
		return err
	}
	gvk := dst.GetObjectKind().GroupVersionKind()
	*dst = out
	dst.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}
