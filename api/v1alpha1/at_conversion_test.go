package v1alpha1

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/randfill"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// bookSample is the At of the book's manifest cnat_v1alpha1_at.yaml.
func bookSample() *At {
	return &At{
		ObjectMeta: metav1.ObjectMeta{Name: "example-at", Namespace: "default"},
		Spec:       AtSpec{Schedule: "2019-04-12T10:12:00Z", Command: "echo YAY"},
	}
}

// fullHub is a v1beta1 At with every field set.
func fullHub() *cnatv1beta1.At {
	t0 := metav1.NewTime(time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(time.Date(2026, 11, 21, 8, 0, 3, 0, time.UTC))
	t2 := metav1.NewTime(time.Date(2026, 11, 21, 8, 1, 30, 0, time.UTC))
	return &cnatv1beta1.At{
		ObjectMeta: metav1.ObjectMeta{
			Name:            "backup",
			Namespace:       "ops",
			UID:             "8e8e7a3c-4a7e-4b47-9a1f-2b9c1d0e6f01",
			ResourceVersion: "4711",
			Generation:      2,
			Labels:          map[string]string{"team": "ops"},
			Annotations:     map[string]string{"note": "nightly <backup> & more"},
			Finalizers:      []string{"example.com/keep"},
		},
		Spec: cnatv1beta1.AtSpec{
			Schedule: "2026-11-21T09:00:00",
			TimeZone: ptr.To("Europe/Berlin"),
			Command:  "pg_dump app > /backup/app.sql && echo done",
			Template: &corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "backup"}},
				Spec: corev1.PodSpec{
					ServiceAccountName: "backup",
					Containers: []corev1.Container{{
						Name:  "main",
						Image: "postgres:17",
						Env:   []corev1.EnvVar{{Name: "PGHOST", Value: "db"}, {Name: "MARK", Value: "<&>"}},
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
						},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
							TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("pg")},
						}},
					}},
				},
			},
			StartingDeadlineSeconds: ptr.To[int64](600),
			Suspend:                 ptr.To(false),
			ActiveDeadlineSeconds:   ptr.To[int64](3600),
			BackoffLimit:            ptr.To[int32](2),
			TTLSecondsAfterFinished: ptr.To[int32](86400),
		},
		Status: cnatv1beta1.AtStatus{
			Phase:              cnatv1beta1.PhaseFailed,
			ObservedGeneration: 2,
			ScheduledTime:      &t0,
			StartTime:          &t1,
			CompletionTime:     &t2,
			PodName:            "backup-3",
			Attempts:           3,
			ExitCode:           ptr.To[int32](1),
			Reason:             cnatv1beta1.ReasonBackoffLimitExceeded,
			Message:            "the command exited 1 in all 3 attempts",
			Conditions: []metav1.Condition{
				{Type: cnatv1beta1.ConditionReady, Status: metav1.ConditionFalse, ObservedGeneration: 2, LastTransitionTime: t2, Reason: cnatv1beta1.ReasonBackoffLimitExceeded, Message: "failed"},
				{Type: cnatv1beta1.ConditionFailed, Status: metav1.ConditionTrue, ObservedGeneration: 2, LastTransitionTime: t2, Reason: cnatv1beta1.ReasonBackoffLimitExceeded, Message: "failed"},
			},
		},
	}
}

func toHub(g Gomega, spoke *At) *cnatv1beta1.At {
	hub := &cnatv1beta1.At{}
	g.ExpectWithOffset(1, spoke.ConvertTo(hub)).To(Succeed())
	return hub
}

func toSpoke(g Gomega, hub *cnatv1beta1.At) *At {
	spoke := &At{}
	g.ExpectWithOffset(1, spoke.ConvertFrom(hub)).To(Succeed())
	return spoke
}

func TestConvertBookSample(t *testing.T) {
	g := NewWithT(t)

	hub := toHub(g, bookSample())
	g.Expect(hub.Name).To(Equal("example-at"))
	g.Expect(hub.Spec).To(Equal(cnatv1beta1.AtSpec{Schedule: "2019-04-12T10:12:00Z", Command: "echo YAY"}))
	g.Expect(hub.Status).To(Equal(cnatv1beta1.AtStatus{}))
	g.Expect(hub.Annotations).To(BeEmpty())

	spoke := toSpoke(g, hub)
	g.Expect(spoke).To(Equal(bookSample()))
}

// phaseTable is the table of doc.go: each v1beta1 phase (the schema's enum,
// and unset) and the v1alpha1 phase and outcome it maps to, both ways.
var phaseTable = []struct {
	v1beta1  cnatv1beta1.Phase
	v1alpha1 string
	outcome  string
}{
	{"", "", ""},
	{cnatv1beta1.PhasePending, PhasePending, ""},
	{cnatv1beta1.PhaseRunning, PhaseRunning, ""},
	{cnatv1beta1.PhaseSucceeded, PhaseDone, "Succeeded"},
	{cnatv1beta1.PhaseFailed, PhaseDone, "Failed"},
	{cnatv1beta1.PhaseMissed, PhaseDone, "Missed"},
}

func TestConvertPhase(t *testing.T) {
	for _, tc := range phaseTable {
		t.Run(string(tc.v1beta1), func(t *testing.T) {
			g := NewWithT(t)
			hub := &cnatv1beta1.At{
				ObjectMeta: metav1.ObjectMeta{Name: "a"},
				Spec:       cnatv1beta1.AtSpec{Schedule: "2019-04-12T10:12:00Z", Command: "echo YAY"},
				Status:     cnatv1beta1.AtStatus{Phase: tc.v1beta1},
			}
			spoke := toSpoke(g, hub)
			g.Expect(spoke.Status).To(Equal(AtStatus{Phase: tc.v1alpha1, Outcome: tc.outcome}))
			g.Expect(spoke.Annotations).To(BeNil())
			g.Expect(toHub(g, spoke)).To(Equal(hub))
		})
	}
	t.Run("the book's DONE without outcome", func(t *testing.T) {
		g := NewWithT(t)
		spoke := bookSample()
		spoke.Status.Phase = PhaseDone
		g.Expect(toHub(g, spoke).Status.Phase).To(Equal(cnatv1beta1.PhaseSucceeded))
	})
}

func TestConvertFullHubRoundTrip(t *testing.T) {
	g := NewWithT(t)
	hub := fullHub()
	before := hub.DeepCopy()

	spoke := toSpoke(g, hub)
	g.Expect(hub).To(Equal(before), "ConvertFrom must not change its source")
	// Every field is a field of v1alpha1, the template and the status included.
	g.Expect(spoke.Spec.TimeZone).To(Equal(ptr.To("Europe/Berlin")))
	g.Expect(spoke.Spec.Template).To(BeComparableTo(hub.Spec.Template))
	g.Expect(spoke.Spec.BackoffLimit).To(Equal(ptr.To[int32](2)))
	g.Expect(spoke.Status.Phase).To(Equal(PhaseDone))
	g.Expect(spoke.Status.Outcome).To(Equal("Failed"))
	g.Expect(spoke.Status.Attempts).To(Equal(int32(3)))
	semanticallyEqual(g, spoke.Status.Conditions, hub.Status.Conditions, "conditions")
	g.Expect(spoke.Annotations).To(Equal(hub.Annotations), "the annotations are the At's own")

	spokeBefore := spoke.DeepCopy()
	semanticallyEqual(g, toHub(g, spoke), before, "v1beta1 -> v1alpha1 -> v1beta1")
	g.Expect(spoke).To(Equal(spokeBefore), "ConvertTo must not change its source")
}

// TestConvertNeverFails: conversion is a mapping of fields, so even an At
// the schema of either version would refuse converts, unchanged, both ways.
func TestConvertNeverFails(t *testing.T) {
	g := NewWithT(t)
	spoke := &At{Spec: AtSpec{BackoffLimit: ptr.To[int32](-1)}, Status: AtStatus{Phase: "SOMEDAY"}}
	hub := toHub(g, spoke)
	g.Expect(hub.Spec).To(Equal(cnatv1beta1.AtSpec{BackoffLimit: ptr.To[int32](-1)}))
	g.Expect(hub.Status.Phase).To(Equal(cnatv1beta1.Phase("SOMEDAY")))
	g.Expect(toSpoke(g, hub)).To(Equal(spoke))
}

func TestConvertKeepsTypeMetaOfDestination(t *testing.T) {
	g := NewWithT(t)
	hub := &cnatv1beta1.At{TypeMeta: metav1.TypeMeta{APIVersion: cnatv1beta1.GroupVersion.String(), Kind: "At"}}
	g.Expect(bookSample().ConvertTo(hub)).To(Succeed())
	g.Expect(hub.TypeMeta).To(Equal(metav1.TypeMeta{APIVersion: cnatv1beta1.GroupVersion.String(), Kind: "At"}))

	spoke := &At{TypeMeta: metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: "At"}}
	g.Expect(spoke.ConvertFrom(fullHub())).To(Succeed())
	g.Expect(spoke.TypeMeta).To(Equal(metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: "At"}))
}

// otherHub is a conversion.Hub that is not a v1beta1 At.
type otherHub struct{ cnatv1beta1.At }

func (*otherHub) Hub() {}

func TestConvertRejectsOtherHub(t *testing.T) {
	g := NewWithT(t)
	g.Expect(bookSample().ConvertTo(&otherHub{})).To(MatchError(ContainSubstring("*v1beta1.At")))
	g.Expect((&At{}).ConvertFrom(&otherHub{})).To(MatchError(ContainSubstring("*v1beta1.At")))
}

// TestV1alpha1HasEveryV1beta1Field fails when v1beta1 gains a spec or status
// field that v1alpha1 does not carry: every v1beta1 field has a v1alpha1
// field of the same name and type (the phase aside, which v1alpha1 spells
// the book's way); v1alpha1 adds only the outcome of a DONE At.
func TestV1alpha1HasEveryV1beta1Field(t *testing.T) {
	g := NewWithT(t)
	// fields maps each field's JSON name to its type.
	fields := func(typ reflect.Type) map[string]reflect.Type {
		out := map[string]reflect.Type{}
		for f := range typ.Fields() {
			out[strings.Split(f.Tag.Get("json"), ",")[0]] = f.Type
		}
		return out
	}
	g.Expect(fields(reflect.TypeFor[AtSpec]())).To(Equal(fields(reflect.TypeFor[cnatv1beta1.AtSpec]())))
	hubStatus := fields(reflect.TypeFor[cnatv1beta1.AtStatus]())
	hubStatus["phase"] = reflect.TypeFor[string]()
	hubStatus["outcome"] = reflect.TypeFor[string]()
	g.Expect(fields(reflect.TypeFor[AtStatus]())).To(Equal(hubStatus))
}

// ---- Round trips over random objects.

// codecs is only there for the meta fuzzer's RawExtension function, which
// no At field uses.
var codecs = serializer.NewCodecFactory(runtime.NewScheme())

// newFiller configures f to fill At objects with values the API can hold:
// the meta fuzzer's valid ObjectMeta (times to the second, as the API
// serializes them; metav1.Time fills itself so), Quantities in canonical
// form, IntOrStrings of one kind, and phases from the enums.
func newFiller(f *randfill.Filler) *randfill.Filler {
	return f.NilChance(.5).NumElements(0, 2).
		Funcs(fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, atFuzzerFuncs)(codecs)...)
}

func atFuzzerFuncs(serializer.CodecFactory) []any {
	return []any{
		func(j *intstr.IntOrString, c randfill.Continue) {
			if c.Bool() {
				*j = intstr.FromInt32(c.Int31())
			} else {
				*j = intstr.FromString(c.String(0))
			}
		},
		func(p *cnatv1beta1.Phase, c randfill.Continue) {
			*p = phaseTable[c.Intn(len(phaseTable))].v1beta1
		},
		func(s *AtStatus, c randfill.Continue) {
			c.FillNoCustom(s)
			// What the v1alpha1 schema holds: the book's phases, and an
			// outcome only with DONE.
			row := phaseTable[c.Intn(len(phaseTable))]
			s.Phase, s.Outcome = row.v1alpha1, row.outcome
		},
	}
}

// randomHub is a random v1beta1 At.
func randomHub(f *randfill.Filler) *cnatv1beta1.At {
	hub := &cnatv1beta1.At{}
	f.Fill(hub)
	if hub.Spec.Command == "" && hub.Spec.Template == nil {
		hub.Spec.Command = "true"
	}
	return hub
}

// randomSpoke is a random v1alpha1 At.
func randomSpoke(f *randfill.Filler) *At {
	spoke := &At{}
	f.Fill(spoke)
	if spoke.Spec.Command == "" && spoke.Spec.Template == nil {
		spoke.Spec.Command = "true"
	}
	return spoke
}

// onTheWire is obj as the API server sends it: JSON, with its apiVersion
// and kind.
func onTheWire(g Gomega, obj runtime.Object, gv schema.GroupVersion) []byte {
	obj = obj.DeepCopyObject()
	obj.GetObjectKind().SetGroupVersionKind(gv.WithKind("At"))
	raw, err := json.Marshal(obj)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return raw
}

// convertStrictly converts raw to gv and decodes the result into into as
// strictly as the API machinery can: case-sensitively, and refusing an
// unknown field, a duplicate field or a value of the wrong type.
func convertStrictly(g Gomega, raw []byte, gv schema.GroupVersion, into runtime.Object) []byte {
	out, err := Convert(raw, gv.String())
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	strict, err := sigsjson.UnmarshalStrict(out, into, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred(), "%s decodes: %s", gv, out)
	g.ExpectWithOffset(1, strict).To(BeEmpty(), "%s decodes strictly: %s", gv, out)
	g.ExpectWithOffset(1, into.GetObjectKind().GroupVersionKind()).To(Equal(gv.WithKind("At")))
	return out
}

// statusBesidesPhase is status in JSON without phase and outcome: what
// the two versions' statuses have in common.
func statusBesidesPhase(g Gomega, status any) map[string]json.RawMessage {
	raw, err := json.Marshal(status)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	var m map[string]json.RawMessage
	g.ExpectWithOffset(1, json.Unmarshal(raw, &m)).To(Succeed())
	delete(m, "phase")
	delete(m, "outcome")
	return m
}

// semanticallyEqual expects got to be want, as the API machinery compares.
func semanticallyEqual(g Gomega, got, want any, what string) {
	g.ExpectWithOffset(1, apiequality.Semantic.DeepEqual(got, want)).To(BeTrue(), func() string {
		return what + " (-want +got):\n" + cmp.Diff(want, got)
	})
}

// checkHubRoundTrip converts hub to v1alpha1 and back on the wire, and
// holds each step to a typed oracle: the v1alpha1 object decodes strictly,
// its metadata is hub's, its spec is hub's (a Go conversion between the two
// spec types, which compiles only while they have the same fields), its
// phase and outcome are the table's, the rest of its status is hub's; back
// in v1beta1 it is hub again, in JSON and as a Go object. The typed
// ConvertFrom gives the same v1alpha1 At, and leaves hub alone.
func checkHubRoundTrip(g Gomega, hub *cnatv1beta1.At) {
	raw := onTheWire(g, hub, cnatv1beta1.GroupVersion)
	spoke := &At{}
	spokeRaw := convertStrictly(g, raw, GroupVersion, spoke)
	semanticallyEqual(g, spoke.ObjectMeta, hub.ObjectMeta, "metadata")
	semanticallyEqual(g, cnatv1beta1.AtSpec(spoke.Spec), hub.Spec, "spec")
	for _, row := range phaseTable {
		if row.v1beta1 == hub.Status.Phase {
			g.Expect([]string{spoke.Status.Phase, spoke.Status.Outcome}).To(Equal([]string{row.v1alpha1, row.outcome}), "phase %q", hub.Status.Phase)
		}
	}
	g.Expect(statusBesidesPhase(g, spoke.Status)).To(Equal(statusBesidesPhase(g, hub.Status)))

	after := &cnatv1beta1.At{}
	g.Expect(convertStrictly(g, spokeRaw, cnatv1beta1.GroupVersion, after)).To(MatchJSON(raw), "v1beta1 -> v1alpha1 -> v1beta1 on the wire")
	after.TypeMeta = hub.TypeMeta
	semanticallyEqual(g, after, hub, "v1beta1 -> v1alpha1 -> v1beta1")

	before := hub.DeepCopy()
	typed := &At{}
	g.Expect(typed.ConvertFrom(hub)).To(Succeed())
	semanticallyEqual(g, hub, before, "ConvertFrom changed its source")
	typed.TypeMeta = spoke.TypeMeta
	semanticallyEqual(g, typed, spoke, "ConvertFrom")
}

// checkSpokeRoundTrip is checkHubRoundTrip the other way: spoke to v1beta1
// and back, and the typed ConvertTo.
func checkSpokeRoundTrip(g Gomega, spoke *At) {
	raw := onTheWire(g, spoke, GroupVersion)
	hub := &cnatv1beta1.At{}
	hubRaw := convertStrictly(g, raw, cnatv1beta1.GroupVersion, hub)
	semanticallyEqual(g, hub.ObjectMeta, spoke.ObjectMeta, "metadata")
	semanticallyEqual(g, AtSpec(hub.Spec), spoke.Spec, "spec")
	for _, row := range phaseTable {
		if row.v1alpha1 == spoke.Status.Phase && row.outcome == spoke.Status.Outcome {
			g.Expect(hub.Status.Phase).To(Equal(row.v1beta1), "phase %q, outcome %q", spoke.Status.Phase, spoke.Status.Outcome)
		}
	}
	g.Expect(statusBesidesPhase(g, hub.Status)).To(Equal(statusBesidesPhase(g, spoke.Status)))

	after := &At{}
	g.Expect(convertStrictly(g, hubRaw, GroupVersion, after)).To(MatchJSON(raw), "v1alpha1 -> v1beta1 -> v1alpha1 on the wire")
	after.TypeMeta = spoke.TypeMeta
	semanticallyEqual(g, after, spoke, "v1alpha1 -> v1beta1 -> v1alpha1")

	before := spoke.DeepCopy()
	typed := &cnatv1beta1.At{}
	g.Expect(spoke.ConvertTo(typed)).To(Succeed())
	semanticallyEqual(g, spoke, before, "ConvertTo changed its source")
	typed.TypeMeta = hub.TypeMeta
	semanticallyEqual(g, typed, hub, "ConvertTo")
}

func TestRoundTripRandom(t *testing.T) {
	g := NewWithT(t)
	f := newFiller(randfill.NewWithSeed(20190412))
	i := 0
	defer func() {
		if t.Failed() {
			t.Logf("failed in iteration %d", i)
		}
	}()
	for ; i < 1000; i++ {
		checkHubRoundTrip(g, randomHub(f))
		checkSpokeRoundTrip(g, randomSpoke(f))
	}
}

// fuzzSeeds are a few inputs to start the fuzzers from.
var fuzzSeeds = [][]byte{
	nil,
	[]byte("0"),
	[]byte("2019-04-12T10:12:00Z echo YAY"),
	[]byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17"),
	[]byte(strings.Repeat("\xff\x7f\x80\x01", 64)),
}

func FuzzHubRoundTrip(f *testing.F) {
	for _, seed := range fuzzSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkHubRoundTrip(NewWithT(t), randomHub(newFiller(randfill.NewFromGoFuzz(data))))
	})
}

func FuzzSpokeRoundTrip(f *testing.F) {
	for _, seed := range fuzzSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkSpokeRoundTrip(NewWithT(t), randomSpoke(newFiller(randfill.NewFromGoFuzz(data))))
	})
}
