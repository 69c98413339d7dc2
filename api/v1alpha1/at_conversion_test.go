package v1alpha1

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
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
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
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
	g.Expect(hub.Namespace).To(Equal("default"))
	g.Expect(hub.Spec.Schedule).To(Equal("2019-04-12T10:12:00Z"))
	g.Expect(hub.Spec.Command).To(Equal("echo YAY"))
	g.Expect(hub.Spec.TimeZone).To(BeNil())
	g.Expect(hub.Spec.Template).To(BeNil())
	g.Expect(hub.Spec).To(Equal(cnatv1beta1.AtSpec{Schedule: "2019-04-12T10:12:00Z", Command: "echo YAY"}))
	g.Expect(hub.Status).To(Equal(cnatv1beta1.AtStatus{}))
	g.Expect(hub.Annotations).To(BeEmpty())

	// Nothing to keep: the v1alpha1 form has no conversion-data annotation.
	spoke := toSpoke(g, hub)
	g.Expect(spoke.Annotations).NotTo(HaveKey(ConversionDataAnnotation))
	g.Expect(spoke).To(Equal(bookSample()))
}

func TestConvertPhaseToV1beta1(t *testing.T) {
	for _, tc := range []struct {
		v1alpha1 string
		v1beta1  cnatv1beta1.Phase
	}{
		{"", ""},
		{PhasePending, cnatv1beta1.PhasePending},
		{PhaseRunning, cnatv1beta1.PhaseRunning},
		{PhaseDone, cnatv1beta1.PhaseSucceeded},
		{"Unknown", "Unknown"},
	} {
		t.Run(tc.v1alpha1, func(t *testing.T) {
			g := NewWithT(t)
			spoke := bookSample()
			spoke.Status.Phase = tc.v1alpha1

			hub := toHub(g, spoke)
			g.Expect(hub.Status).To(Equal(cnatv1beta1.AtStatus{Phase: tc.v1beta1}))

			back := toSpoke(g, hub)
			g.Expect(back.Annotations).NotTo(HaveKey(ConversionDataAnnotation))
			g.Expect(back).To(Equal(spoke))
		})
	}
}

func TestConvertPhaseToV1alpha1(t *testing.T) {
	for _, tc := range []struct {
		v1beta1  cnatv1beta1.Phase
		v1alpha1 string
		// annotation is the conversion data the v1alpha1 form carries.
		annotation string
	}{
		{"", "", ""},
		{cnatv1beta1.PhasePending, PhasePending, ""},
		{cnatv1beta1.PhaseRunning, PhaseRunning, ""},
		{cnatv1beta1.PhaseSucceeded, PhaseDone, ""},
		{cnatv1beta1.PhaseFailed, PhaseDone, `{"status":{"phase":"Failed"}}`},
		{cnatv1beta1.PhaseMissed, PhaseDone, `{"status":{"phase":"Missed"}}`},
		{"Unknown", "Unknown", ""},
		// A v1alpha1 value in v1beta1, outside its enum, still comes back.
		{"DONE", PhaseDone, `{"status":{"phase":"DONE"}}`},
	} {
		t.Run(string(tc.v1beta1), func(t *testing.T) {
			g := NewWithT(t)
			hub := &cnatv1beta1.At{
				ObjectMeta: metav1.ObjectMeta{Name: "a"},
				Spec:       cnatv1beta1.AtSpec{Schedule: "2019-04-12T10:12:00Z", Command: "echo YAY"},
				Status:     cnatv1beta1.AtStatus{Phase: tc.v1beta1},
			}

			spoke := toSpoke(g, hub)
			g.Expect(spoke.Status.Phase).To(Equal(tc.v1alpha1))
			if tc.annotation == "" {
				g.Expect(spoke.Annotations).To(BeNil())
			} else {
				g.Expect(spoke.Annotations).To(Equal(map[string]string{ConversionDataAnnotation: tc.annotation}))
			}

			g.Expect(toHub(g, spoke)).To(Equal(hub))
		})
	}
}

func TestConvertFullHubRoundTrip(t *testing.T) {
	g := NewWithT(t)
	hub := fullHub()
	before := hub.DeepCopy()

	spoke := toSpoke(g, hub)
	g.Expect(hub).To(Equal(before), "ConvertFrom changed its source")
	g.Expect(spoke.ObjectMeta.Name).To(Equal("backup"))
	g.Expect(spoke.Labels).To(Equal(hub.Labels))
	g.Expect(spoke.Annotations).To(HaveKeyWithValue("note", "nightly <backup> & more"))
	g.Expect(spoke.Spec).To(Equal(AtSpec{Schedule: hub.Spec.Schedule, Command: hub.Spec.Command}))
	g.Expect(spoke.Status).To(Equal(AtStatus{Phase: PhaseDone}))

	// The annotation holds what v1alpha1 has no field for, and only that.
	raw := spoke.Annotations[ConversionDataAnnotation]
	g.Expect(raw).NotTo(ContainSubstring("pg_dump"), "spec.command, which v1alpha1 carries")
	g.Expect(raw).To(ContainSubstring(`{"name":"MARK","value":"<&>"}`), "<, & and > unescaped")
	var data map[string]map[string]any
	g.Expect(json.Unmarshal([]byte(raw), &data)).To(Succeed())
	g.Expect(data).To(HaveLen(2))
	g.Expect(data["spec"]).To(HaveLen(7))
	g.Expect(data["spec"]).NotTo(Or(HaveKey("schedule"), HaveKey("command")))
	g.Expect(data["spec"]).To(HaveKeyWithValue("timeZone", "Europe/Berlin"))
	g.Expect(data["status"]).To(HaveKeyWithValue("phase", "Failed"))
	g.Expect(data["status"]).To(HaveKey("conditions"))

	back := toHub(g, spoke)
	g.Expect(apiequality.Semantic.DeepEqual(back, before)).To(BeTrue(), func() string { return cmp.Diff(before, back) })
	g.Expect(back.Annotations).NotTo(HaveKey(ConversionDataAnnotation))
}

func TestConvertAnnotationFormat(t *testing.T) {
	g := NewWithT(t)
	hub := &cnatv1beta1.At{
		ObjectMeta: metav1.ObjectMeta{Name: "backup"},
		Spec: cnatv1beta1.AtSpec{
			Schedule:     "2026-11-21T09:00:00",
			TimeZone:     ptr.To("Europe/Berlin"),
			Command:      "backup.sh",
			BackoffLimit: ptr.To[int32](2),
		},
		Status: cnatv1beta1.AtStatus{
			Phase:              cnatv1beta1.PhaseFailed,
			ObservedGeneration: 1,
			Attempts:           3,
			ExitCode:           ptr.To[int32](1),
			Reason:             cnatv1beta1.ReasonBackoffLimitExceeded,
		},
	}

	spoke := toSpoke(g, hub)
	// The example of the package documentation.
	g.Expect(spoke.Annotations).To(Equal(map[string]string{
		ConversionDataAnnotation: `{"spec":{"timeZone":"Europe/Berlin","backoffLimit":2},"status":{"phase":"Failed","observedGeneration":1,"attempts":3,"exitCode":1,"reason":"BackoffLimitExceeded"}}`,
	}))
	g.Expect(toHub(g, spoke)).To(Equal(hub))
}

func TestConvertGarbledAnnotationIsIgnored(t *testing.T) {
	for _, raw := range []string{
		"",
		"not JSON",
		"null",
		"42",
		`"a string"`,
		`["spec"]`,
		`{}`,
		`{"spec":{},"status":{}}`,
		`{"unknown":{"timeZone":"Europe/Berlin"}}`,
		`{"spec":{"suspend":"yes"}}`,
		`{"spec":{"timeZone":"Europe/Berlin"}`,
		`{"status":{"phase":"Failed"}} trailing`,
	} {
		t.Run(raw, func(t *testing.T) {
			g := NewWithT(t)
			spoke := bookSample()
			spoke.Status.Phase = PhaseDone
			spoke.Annotations = map[string]string{ConversionDataAnnotation: raw, "other": "x"}

			hub := toHub(g, spoke)
			// The plain mapping, and the annotation stays as an ordinary one.
			g.Expect(hub.Spec).To(Equal(cnatv1beta1.AtSpec{Schedule: "2019-04-12T10:12:00Z", Command: "echo YAY"}))
			g.Expect(hub.Status).To(Equal(cnatv1beta1.AtStatus{Phase: cnatv1beta1.PhaseSucceeded}))
			g.Expect(hub.Annotations).To(Equal(spoke.Annotations))

			g.Expect(toSpoke(g, hub)).To(Equal(spoke))
		})
	}
}

func TestConvertEditsThroughV1alpha1(t *testing.T) {
	t.Run("schedule and command win over the stored data", func(t *testing.T) {
		g := NewWithT(t)
		spoke := toSpoke(g, fullHub())
		spoke.Spec.Schedule = "2026-12-24T18:00:00"
		spoke.Spec.Command = "echo edited"

		hub := toHub(g, spoke)
		want := fullHub()
		want.Spec.Schedule = "2026-12-24T18:00:00"
		want.Spec.Command = "echo edited"
		g.Expect(apiequality.Semantic.DeepEqual(hub, want)).To(BeTrue(), func() string { return cmp.Diff(want, hub) })

		// And the edited v1alpha1 object comes back as it is.
		g.Expect(toSpoke(g, hub)).To(Equal(spoke))
	})

	t.Run("a new phase wins over the stored one", func(t *testing.T) {
		g := NewWithT(t)
		spoke := toSpoke(g, fullHub()) // Failed: DONE
		spoke.Status.Phase = PhasePending

		hub := toHub(g, spoke)
		want := fullHub()
		want.Status.Phase = cnatv1beta1.PhasePending
		g.Expect(apiequality.Semantic.DeepEqual(hub, want)).To(BeTrue(), func() string { return cmp.Diff(want, hub) })
	})

	t.Run("the stored phase stays while it maps to the v1alpha1 one", func(t *testing.T) {
		g := NewWithT(t)
		hub := fullHub()
		hub.Status.Phase = cnatv1beta1.PhaseMissed
		spoke := toSpoke(g, hub)
		g.Expect(spoke.Status.Phase).To(Equal(PhaseDone))
		spoke.Annotations["other"] = "added through v1alpha1"

		back := toHub(g, spoke)
		g.Expect(back.Status.Phase).To(Equal(cnatv1beta1.PhaseMissed))
		g.Expect(back.Annotations).To(HaveKeyWithValue("other", "added through v1alpha1"))
	})

	t.Run("a deleted annotation gives the plain mapping", func(t *testing.T) {
		g := NewWithT(t)
		spoke := toSpoke(g, fullHub())
		delete(spoke.Annotations, ConversionDataAnnotation)

		hub := toHub(g, spoke)
		g.Expect(hub.Spec).To(Equal(cnatv1beta1.AtSpec{Schedule: fullHub().Spec.Schedule, Command: fullHub().Spec.Command}))
		g.Expect(hub.Status).To(Equal(cnatv1beta1.AtStatus{Phase: cnatv1beta1.PhaseSucceeded}))
	})
}

// A v1beta1 object may carry the annotation key itself; it is kept.
func TestConvertHubOwnAnnotation(t *testing.T) {
	for name, value := range map[string]string{
		"garbage":        "written by hand",
		"conversionData": `{"spec":{"suspend":true}}`,
		"empty":          "",
	} {
		t.Run(name, func(t *testing.T) {
			for _, hub := range []*cnatv1beta1.At{fullHub(), {ObjectMeta: metav1.ObjectMeta{Name: "bare"}}} {
				g := NewWithT(t)
				hub.Annotations = map[string]string{ConversionDataAnnotation: value}

				spoke := toSpoke(g, hub)
				back := toHub(g, spoke)
				g.Expect(apiequality.Semantic.DeepEqual(back, hub)).To(BeTrue(), func() string { return cmp.Diff(hub, back) })
				g.Expect(toSpoke(g, back)).To(Equal(spoke))
			}
		})
	}
}

func TestConvertDoesNotChangeSource(t *testing.T) {
	g := NewWithT(t)
	spoke := toSpoke(g, fullHub())
	before := spoke.DeepCopy()

	hub := toHub(g, spoke)
	g.Expect(spoke).To(Equal(before))

	// Nor does the result share memory with the source.
	hub.Annotations["note"] = "changed"
	hub.Spec.Template.Spec.Containers[0].Image = "changed"
	g.Expect(spoke).To(Equal(before))
	hub2 := toHub(g, spoke)
	g.Expect(hub2.Spec.Template.Spec.Containers[0].Image).To(Equal("postgres:17"))
}

func TestConvertKeepsTypeMetaOfDestination(t *testing.T) {
	g := NewWithT(t)
	hub := &cnatv1beta1.At{TypeMeta: metav1.TypeMeta{APIVersion: cnatv1beta1.GroupVersion.String(), Kind: "At"}}
	g.Expect(bookSample().ConvertTo(hub)).To(Succeed())
	g.Expect(hub.TypeMeta).To(Equal(metav1.TypeMeta{APIVersion: cnatv1beta1.GroupVersion.String(), Kind: "At"}))

	spoke := &At{TypeMeta: metav1.TypeMeta{APIVersion: GroupVersion.String(), Kind: "At"}}
	g.Expect(spoke.ConvertFrom(hub)).To(Succeed())
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

// TestConversionSpecCoversHub fails when v1beta1.AtSpec gains a field that
// conversionSpec does not keep.
func TestConversionSpecCoversHub(t *testing.T) {
	g := NewWithT(t)
	jsonNames := func(typ reflect.Type) []string {
		var names []string
		for f := range typ.Fields() {
			names = append(names, strings.Split(f.Tag.Get("json"), ",")[0])
		}
		slices.Sort(names)
		return names
	}
	hub := slices.DeleteFunc(jsonNames(reflect.TypeFor[cnatv1beta1.AtSpec]()), func(n string) bool {
		return n == "schedule" || n == "command"
	})
	g.Expect(jsonNames(reflect.TypeFor[conversionSpec]())).To(Equal(hub))

	// The same holds for the two fields v1alpha1 carries.
	g.Expect(jsonNames(reflect.TypeFor[AtSpec]())).To(Equal([]string{"command", "schedule"}))
}

// ---- Round trips over random objects.

// codecs is only there for the meta fuzzer's RawExtension function, which
// no At field uses.
var codecs = serializer.NewCodecFactory(runtime.NewScheme())

// hubPhases are the v1beta1 phases the fuzzer picks, besides random strings:
// the enum, "" and, outside the enum, the v1alpha1 values.
var hubPhases = []cnatv1beta1.Phase{
	"", cnatv1beta1.PhasePending, cnatv1beta1.PhaseRunning, cnatv1beta1.PhaseSucceeded,
	cnatv1beta1.PhaseFailed, cnatv1beta1.PhaseMissed, PhasePending, PhaseRunning, PhaseDone,
}

// spokePhases are the v1alpha1 phases the fuzzer picks, besides random
// strings: the enum and "".
var spokePhases = []string{"", PhasePending, PhaseRunning, PhaseDone}

// newFiller configures f to fill At objects with values the API can hold:
// the meta fuzzer's valid ObjectMeta (times to the second, as the API
// serializes them; metav1.Time fills itself so), Quantities in canonical
// form, IntOrStrings of one kind, and phases mostly from the enums.
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
			if c.Intn(4) == 0 {
				*p = cnatv1beta1.Phase(c.String(0))
			} else {
				*p = hubPhases[c.Intn(len(hubPhases))]
			}
		},
		func(s *AtStatus, c randfill.Continue) {
			// Not the v1beta1 phase names: the v1alpha1 schema rejects them,
			// and they are read as v1beta1 phases (see the package doc).
			s.Phase = spokePhases[c.Intn(len(spokePhases))]
			if c.Intn(4) == 0 {
				if p := c.String(0); phaseToV1alpha1(cnatv1beta1.Phase(p)) == p {
					s.Phase = p
				}
			}
		},
	}
}

// randomHub is a random v1beta1 At, sometimes one that v1alpha1 holds
// entirely (no annotation needed), sometimes with an annotation of its own
// under ConversionDataAnnotation: any string, or one that reads as
// conversion data.
func randomHub(f *randfill.Filler) *cnatv1beta1.At {
	hub := &cnatv1beta1.At{}
	f.Fill(hub)
	var choice uint8
	f.Fill(&choice)
	if choice&0x10 != 0 {
		hub.Spec = cnatv1beta1.AtSpec{Schedule: hub.Spec.Schedule, Command: hub.Spec.Command}
		hub.Status = cnatv1beta1.AtStatus{Phase: hub.Status.Phase}
	}
	switch choice % 8 {
	case 0:
		var s string
		f.Fill(&s)
		setAnnotation(&hub.ObjectMeta, s)
	case 1:
		other := &cnatv1beta1.At{}
		f.Fill(other)
		var spoke At
		if err := spoke.ConvertFrom(other); err != nil {
			panic(err)
		}
		if raw, ok := spoke.Annotations[ConversionDataAnnotation]; ok {
			setAnnotation(&hub.ObjectMeta, raw)
		}
	}
	return hub
}

// randomSpoke is a random v1alpha1 At as a client may send it: without the
// conversion-data annotation, with one of a user's own, or as read through
// v1alpha1 and with schedule and command perhaps edited.
func randomSpoke(f *randfill.Filler) *At {
	spoke := &At{}
	var choice uint8
	f.Fill(&choice)
	switch choice % 4 {
	case 0, 1:
		f.Fill(spoke)
		removeAnnotation(&spoke.ObjectMeta)
	case 2:
		f.Fill(spoke)
		var s string
		f.Fill(&s)
		setAnnotation(&spoke.ObjectMeta, s)
	case 3:
		if err := spoke.ConvertFrom(randomHub(f)); err != nil {
			panic(err)
		}
		var edit uint8
		f.Fill(&edit)
		if edit&1 != 0 {
			f.Fill(&spoke.Spec.Schedule)
		}
		if edit&2 != 0 {
			f.Fill(&spoke.Spec.Command)
		}
	}
	return spoke
}

// checkHubRoundTrip converts hub to v1alpha1 and back and expects the same
// object, and the source unchanged.
func checkHubRoundTrip(g Gomega, hub *cnatv1beta1.At) {
	before := hub.DeepCopy()
	spoke := &At{}
	g.Expect(spoke.ConvertFrom(hub)).To(Succeed())
	g.Expect(apiequality.Semantic.DeepEqual(hub, before)).To(BeTrue(), func() string { return "ConvertFrom changed its source (-before +after):\n" + cmp.Diff(before, hub) })
	spokeBefore := spoke.DeepCopy()
	after := &cnatv1beta1.At{}
	g.Expect(spoke.ConvertTo(after)).To(Succeed())
	g.Expect(apiequality.Semantic.DeepEqual(spoke, spokeBefore)).To(BeTrue(), func() string {
		return "ConvertTo changed its source (-before +after):\n" + cmp.Diff(spokeBefore, spoke)
	})
	g.Expect(apiequality.Semantic.DeepEqual(after, before)).To(BeTrue(), func() string {
		return "v1beta1 -> v1alpha1 -> v1beta1 (-before +after):\n" + cmp.Diff(before, after) + fmt.Sprintf("\nv1alpha1 annotations: %q", spoke.Annotations)
	})
}

// checkSpokeRoundTrip converts spoke to v1beta1 and back and expects the
// same object, and the source unchanged.
func checkSpokeRoundTrip(g Gomega, spoke *At) {
	before := spoke.DeepCopy()
	hub := &cnatv1beta1.At{}
	g.Expect(spoke.ConvertTo(hub)).To(Succeed())
	g.Expect(apiequality.Semantic.DeepEqual(spoke, before)).To(BeTrue(), func() string { return "ConvertTo changed its source (-before +after):\n" + cmp.Diff(before, spoke) })
	after := &At{}
	g.Expect(after.ConvertFrom(hub)).To(Succeed())
	g.Expect(apiequality.Semantic.DeepEqual(after, before)).To(BeTrue(), func() string {
		return "v1alpha1 -> v1beta1 -> v1alpha1 (-before +after):\n" + cmp.Diff(before, after)
	})
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
