package webhook

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1alpha1 "github.com/programming-kubernetes/cnat/api/v1alpha1"
	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// settledAt creates an At scheduled far ahead and waits until the
// controller wrote its Pending status: a status nothing changes any more.
func settledAt(t *testing.T, ns, name string) *cnatv1beta1.At {
	g := NewWithT(t)
	at := &cnatv1beta1.At{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       cnatv1beta1.AtSpec{Schedule: "2099-01-01T00:00:00Z", Command: "echo"},
	}
	g.Expect(adminClient.Create(t.Context(), at)).To(Succeed())
	g.Eventually(func(g Gomega) cnatv1beta1.Phase {
		g.Expect(adminClient.Get(t.Context(), client.ObjectKeyFromObject(at), at)).To(Succeed())
		return at.Status.Phase
	}).Should(Equal(cnatv1beta1.PhasePending))
	return at
}

func asV1alpha1(t *testing.T, at *cnatv1beta1.At) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(cnatv1alpha1.GroupVersion.WithKind("At"))
	NewWithT(t).Expect(adminClient.Get(t.Context(), client.ObjectKeyFromObject(at), u)).To(Succeed())
	return u
}

// TestStatusIsWrittenOnlyThroughTheStatusSubresource: whatever version a
// write to the main resource uses, the stored status stays what the
// controller wrote.
func TestStatusIsWrittenOnlyThroughTheStatusSubresource(t *testing.T) {
	ns := newNamespace(t)
	forged := map[string]any{"phase": "RUNNING", "attempts": int64(5), "reason": "Retrying", "podName": "forged-5"}

	t.Run("issue 9: a status in an annotation", func(t *testing.T) {
		g := NewWithT(t)
		at := settledAt(t, ns, "annotation")
		u := asV1alpha1(t, at)
		// The annotation in which a v1alpha1 form that was never released
		// carried the template, and issue 9 a status through the
		// conversion.
		const annotation = "cnat.programming-kubernetes.info/conversion-data"
		u.SetAnnotations(map[string]string{annotation: `{"status":{"phase":"Running","attempts":5,"reason":"Retrying"}}`})
		// Only the annotations change, so the validating webhook lets it
		// be: it is an ordinary annotation, which nothing reads.
		g.Expect(adminClient.Update(t.Context(), u)).To(Succeed())

		got := &cnatv1beta1.At{}
		g.Expect(adminClient.Get(t.Context(), client.ObjectKeyFromObject(at), got)).To(Succeed())
		g.Expect(got.Annotations).To(HaveKey(annotation))
		g.Expect(got.Status).To(BeComparableTo(at.Status), "the stored v1beta1 status is unchanged")
	})

	for _, version := range []string{"v1alpha1", "v1beta1"} {
		t.Run("update of the main resource through "+version, func(t *testing.T) {
			g := NewWithT(t)
			at := settledAt(t, ns, "update-"+version)
			g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
				u := asV1alpha1(t, at)
				if version == "v1beta1" {
					u.SetGroupVersionKind(cnatv1beta1.GroupVersion.WithKind("At"))
					if err := adminClient.Get(t.Context(), client.ObjectKeyFromObject(at), u); err != nil {
						return err
					}
					forged["phase"] = "Running"
				}
				for k, v := range forged {
					g.Expect(unstructured.SetNestedField(u.Object, v, "status", k)).To(Succeed())
				}
				u.SetLabels(map[string]string{"edited": version})
				return adminClient.Update(t.Context(), u)
			})).To(Succeed(), "the write itself is allowed: it changes a label")

			got := &cnatv1beta1.At{}
			g.Expect(adminClient.Get(t.Context(), client.ObjectKeyFromObject(at), got)).To(Succeed())
			g.Expect(got.Labels).To(HaveKeyWithValue("edited", version))
			g.Expect(got.Status).To(BeComparableTo(at.Status), "the API server kept the stored status")
		})
		t.Run("merge patch of the main resource through "+version, func(t *testing.T) {
			g := NewWithT(t)
			at := settledAt(t, ns, "patch-"+version)
			u := &unstructured.Unstructured{}
			gv := cnatv1beta1.GroupVersion
			if version == "v1alpha1" {
				gv = cnatv1alpha1.GroupVersion
			}
			u.SetGroupVersionKind(gv.WithKind("At"))
			u.SetNamespace(ns)
			u.SetName(at.Name)
			g.Expect(adminClient.Patch(t.Context(), u, client.RawPatch(types.MergePatchType,
				[]byte(`{"status":{"attempts":5,"reason":"Retrying","outcome":"Failed","conditions":[]}}`)))).To(Succeed())
			got := &cnatv1beta1.At{}
			g.Expect(adminClient.Get(t.Context(), client.ObjectKeyFromObject(at), got)).To(Succeed())
			g.Expect(got.Status).To(BeComparableTo(at.Status))
		})
	}
}

// TestStatusOfTheWrongTypeIsRefusedNamingTheField: the conversion passes a
// status value of the wrong type through as it does any other; a status
// write with one is refused by the schema of the version it is sent
// through, naming the field. (A write of the main resource keeps the stored
// status whatever it says: above.)
func TestStatusOfTheWrongTypeIsRefusedNamingTheField(t *testing.T) {
	ns := newNamespace(t)
	at := settledAt(t, ns, "wrong-types")
	for _, tc := range []struct {
		version, name string
		status        map[string]any
		field, text   string
	}{
		{"v1alpha1", "phase a number", map[string]any{"phase": int64(5)}, "status.phase", "must be of type string"},
		{"v1alpha1", "outcome a list", map[string]any{"phase": "DONE", "outcome": []any{"Failed"}}, "status.outcome", "must be of type string"},
		{"v1alpha1", "attempts a string", map[string]any{"phase": "RUNNING", "attempts": "5"}, "status.attempts", "must be of type integer"},
		{"v1beta1", "phase a number", map[string]any{"phase": int64(5)}, "status.phase", "must be of type string"},
		{"v1beta1", "attempts a string", map[string]any{"phase": "Running", "attempts": "5"}, "status.attempts", "must be of type integer"},
	} {
		t.Run(tc.version+"/"+tc.name, func(t *testing.T) {
			g := NewWithT(t)
			u := asV1alpha1(t, at)
			if tc.version == "v1beta1" {
				u.SetGroupVersionKind(cnatv1beta1.GroupVersion.WithKind("At"))
				g.Expect(adminClient.Get(t.Context(), client.ObjectKeyFromObject(at), u)).To(Succeed())
			}
			g.Expect(unstructured.SetNestedField(u.Object, tc.status, "status")).To(Succeed())
			err := adminClient.Status().Update(t.Context(), u)
			g.Expect(err).To(HaveOccurred())
			g.Expect(refusals(err)).To(ContainElement(refusing(tc.field, tc.text)), "the refusal names %s: %v", tc.field, err)
		})
	}
}

// TestRulesHoldWithoutTheAdmissionWebhooks deletes the webhook
// configurations and sends through v1alpha1 what issue 12 found stored
// unvalidated: the CRD's schema and CEL rules of v1alpha1, which cannot be
// turned off separately, refuse it, naming the field.
func TestRulesHoldWithoutTheAdmissionWebhooks(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newNamespace(t)

	// A probe only the validating webhook refuses: an unknown time zone.
	probe := func(ctx context.Context, name string) error {
		at := &cnatv1beta1.At{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec:       cnatv1beta1.AtSpec{Schedule: "2099-01-01T09:00", TimeZone: ptr.To("Mars/Olympus_Mons"), Command: "echo"},
		}
		err := adminClient.Create(ctx, at)
		if err == nil {
			_ = adminClient.Delete(ctx, at)
		}
		return err
	}
	mutating := &admissionregistrationv1.MutatingWebhookConfigurationList{}
	validating := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	g.Expect(adminClient.List(ctx, mutating)).To(Succeed())
	g.Expect(adminClient.List(ctx, validating)).To(Succeed())
	for i := range mutating.Items {
		g.Expect(adminClient.Delete(ctx, &mutating.Items[i])).To(Succeed())
	}
	for i := range validating.Items {
		g.Expect(adminClient.Delete(ctx, &validating.Items[i])).To(Succeed())
	}
	t.Cleanup(func() {
		g := NewWithT(t)
		ctx := context.Background() // t.Context() is done when cleanups run
		for i := range mutating.Items {
			c := mutating.Items[i].DeepCopy()
			c.ResourceVersion, c.UID, c.ManagedFields, c.CreationTimestamp = "", "", nil, metav1.Time{}
			g.Expect(adminClient.Create(ctx, c)).To(Succeed())
		}
		for i := range validating.Items {
			c := validating.Items[i].DeepCopy()
			c.ResourceVersion, c.UID, c.ManagedFields, c.CreationTimestamp = "", "", nil, metav1.Time{}
			g.Expect(adminClient.Create(ctx, c)).To(Succeed())
		}
		g.Eventually(func() error { return probe(ctx, "probe-back") }).Should(HaveOccurred(), "the webhooks are back")
	})
	g.Eventually(func() error { return probe(ctx, "probe-off") }).Should(Succeed(), "the webhooks are off")

	for _, tc := range []struct {
		name      string
		edit      func(map[string]any)
		wantField string
	}{
		{"a 64-character name", set("metadata.name", strings.Repeat("a", 64)), "metadata.name"},
		{"backoffLimit 100000", set("spec.backoffLimit", 100000), "spec.backoffLimit"},
		{"negative ttlSecondsAfterFinished", set("spec.ttlSecondsAfterFinished", -1), "spec.ttlSecondsAfterFinished"},
		{"a NUL in the command", set("spec.command", "echo \x00"), "spec.command"},
		{"a command of 131072 bytes", set("spec.command", strings.Repeat("😀", 32768)), "spec.command"},
		{"a template without containers", template(map[string]any{}), "spec.template.spec.containers"},
		{"a template quantity that does not parse", template(container(map[string]any{"resources": map[string]any{"limits": map[string]any{"cpu": "lots"}}})), "spec.template.spec.containers[0].resources.limits.cpu"},
		{"neither command nor template", set("spec.command", nil), "spec.command"},
		{"cnat's released label in the template", set("spec.template", map[string]any{
			"metadata": map[string]any{"labels": map[string]any{cnatv1beta1.LabelReleased: "true"}},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "main"}}},
		}), "spec.template.metadata.labels: Forbidden: must not carry the label " + cnatv1beta1.LabelReleased},
		{"cnat's annotation in the template", set("spec.template", map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{cnatv1beta1.AnnotationSpecHash: "0"}},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "main"}}},
		}), "spec.template.metadata.annotations: Forbidden: must not carry the annotation " + cnatv1beta1.AnnotationSpecHash},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := newAtObject(ns, "no-webhooks", true)
			tc.edit(obj.Object)
			if obj.Object["spec"].(map[string]any)["command"] == nil {
				delete(obj.Object["spec"].(map[string]any), "command")
			}
			err := adminClient.Create(ctx, obj)
			g.Expect(err).To(Satisfy(apierrors.IsInvalid), "422 Invalid from the schema")
			g.Expect(err).To(MatchError(ContainSubstring(tc.wantField)))
		})
	}

	t.Run("schedule and command cannot change once fired", func(t *testing.T) {
		g := NewWithT(t)
		at := &cnatv1beta1.At{
			ObjectMeta: metav1.ObjectMeta{Name: "fired", Namespace: ns},
			Spec:       cnatv1beta1.AtSpec{Schedule: "2020-01-01T00:00:00Z", Command: "sleep 3600"},
		}
		g.Expect(adminClient.Create(ctx, at)).To(Succeed())
		g.Eventually(func(g Gomega) int32 {
			g.Expect(adminClient.Get(ctx, client.ObjectKeyFromObject(at), at)).To(Succeed())
			return at.Status.Attempts
		}).Should(Equal(int32(1)))
		for _, patch := range []string{`{"spec":{"command":"rm -rf /"}}`, `{"spec":{"schedule":"2030-01-01T00:00:00Z"}}`} {
			u := asV1alpha1(t, at)
			err := adminClient.Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(patch)))
			g.Expect(err).To(MatchError(ContainSubstring("cannot change once the At has fired")))
		}
	})

	// The rule the validating webhook repeats: without it, only the
	// v1alpha1 schema's own CEL rule over spec.template keeps an At that
	// fired from running another Pod on its retries.
	t.Run("template cannot change once fired", func(t *testing.T) {
		g := NewWithT(t)
		at := &cnatv1beta1.At{
			ObjectMeta: metav1.ObjectMeta{Name: "fired-template", Namespace: ns},
			Spec: cnatv1beta1.AtSpec{Schedule: "2020-01-01T00:00:00Z", Command: "sleep 3600", Template: &corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "main", Image: "alpine:3.20"}}},
			}},
		}
		g.Expect(adminClient.Create(ctx, at)).To(Succeed())
		g.Eventually(func(g Gomega) int32 {
			g.Expect(adminClient.Get(ctx, client.ObjectKeyFromObject(at), at)).To(Succeed())
			return at.Status.Attempts
		}).Should(Equal(int32(1)))
		for _, patch := range []string{
			`{"spec":{"template":{"spec":{"containers":[{"name":"main","image":"evil:latest"}]}}}}`,
			`{"spec":{"template":null}}`,
		} {
			u := asV1alpha1(t, at)
			err := adminClient.Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(patch)))
			g.Expect(err).To(Satisfy(apierrors.IsInvalid), "422 Invalid")
			g.Expect(err).To(MatchError(ContainSubstring("spec.template: Forbidden: spec.template cannot change once the At has fired")))
		}
		got := &cnatv1beta1.At{}
		g.Expect(adminClient.Get(ctx, client.ObjectKeyFromObject(at), got)).To(Succeed())
		g.Expect(got.Spec.Template).To(BeComparableTo(at.Spec.Template), "the stored template is the one that fired")
	})
}

// TestV1alpha1OutcomeOnlyWhenDone: the v1alpha1 status says how a DONE At
// ended in status.outcome, and only then, so that every stored status reads
// the same in both versions (a PENDING with an outcome, or a DONE without
// one, would not survive a round trip through v1beta1).
func TestV1alpha1OutcomeOnlyWhenDone(t *testing.T) {
	ns := newNamespace(t)
	for name, status := range map[string]string{
		"pending-with-outcome": `{"status":{"phase":"PENDING","outcome":"Failed"}}`,
		"done-without-outcome": `{"status":{"phase":"DONE","outcome":null}}`,
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			at := settledAt(t, ns, name)
			u := asV1alpha1(t, at)
			err := adminClient.Status().Patch(t.Context(), u, client.RawPatch(types.MergePatchType, []byte(status)))
			g.Expect(err).To(Satisfy(apierrors.IsInvalid))
			g.Expect(err).To(MatchError(ContainSubstring("status.outcome: Invalid value")))
			g.Expect(err).To(MatchError(ContainSubstring("status.outcome is set exactly when status.phase is DONE")))
		})
	}
	t.Run("done-with-outcome", func(t *testing.T) {
		g := NewWithT(t)
		at := settledAt(t, ns, "done")
		u := asV1alpha1(t, at)
		g.Expect(adminClient.Status().Patch(t.Context(), u, client.RawPatch(types.MergePatchType,
			[]byte(`{"status":{"phase":"DONE","outcome":"Missed"}}`)))).To(Succeed())
		got := &cnatv1beta1.At{}
		g.Expect(adminClient.Get(t.Context(), client.ObjectKeyFromObject(at), got)).To(Succeed())
		g.Expect(got.Status.Phase).To(Equal(cnatv1beta1.PhaseMissed))
	})
}
