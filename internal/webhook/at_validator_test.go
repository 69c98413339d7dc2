package webhook

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// TestValidateAtRefusesCnatKeysInTheTemplate: the webhook names each of
// cnat's own keys a template carries, as the field that holds it, and lets
// every other key be.
func TestValidateAtRefusesCnatKeysInTheTemplate(t *testing.T) {
	g := NewWithT(t)
	at := &cnatv1beta1.At{
		ObjectMeta: metav1.ObjectMeta{Name: "keys", Namespace: "default"},
		Spec: cnatv1beta1.AtSpec{Schedule: "2099-01-01T00:00:00Z", Template: &corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{
				Labels: map[string]string{
					"team": "payments", "team.cnat.programming-kubernetes.info/role": "x",
					cnatv1beta1.LabelReleased: "true", cnatv1beta1.LabelAt: "someone-else",
				},
				Annotations: map[string]string{"example.com/owner": "payments", cnatv1beta1.AnnotationSpecHash: "0"},
			},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox:1.37"}}},
		}},
	}
	var got []string
	for _, err := range validateAt(at) {
		got = append(got, err.Error())
	}
	const why = "keys under cnat.programming-kubernetes.info/ are the claims and records cnat puts on the Pods it creates"
	g.Expect(got).To(ConsistOf(
		`spec.template.metadata.labels[cnat.programming-kubernetes.info/at]: Forbidden: `+why,
		`spec.template.metadata.labels[cnat.programming-kubernetes.info/released]: Forbidden: `+why,
		`spec.template.metadata.annotations[cnat.programming-kubernetes.info/spec-hash]: Forbidden: `+why,
	))
}
