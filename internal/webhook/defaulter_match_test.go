package webhook

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// defaulterCalls is how many requests the defaulting webhook has answered,
// from controller-runtime's webhook metrics.
func defaulterCalls(g *WithT) float64 {
	families, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	total := 0.0
	for _, f := range families {
		if f.GetName() != "controller_runtime_webhook_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "webhook" && l.GetValue() == DefaultingPath {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

// The matchCondition template-needs-defaults lets the API server skip the
// defaulting webhook. It is sound only if it is false exactly when Default
// would change nothing: for each template, the At the API server admits
// (a dry-run create, through the real webhook configuration) is the one
// Default makes of it, and the webhook was called only when that differs
// from what was sent.
func TestDefaulterIsCalledOnlyWhenItChangesSomething(t *testing.T) {
	ns := newNamespace(t)
	full := func() *corev1.PodTemplateSpec {
		return &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy:  corev1.RestartPolicyNever,
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox:1.37"}},
			Containers:     []corev1.Container{{Name: "main", Image: "busybox:1.37"}, {Name: "side", Image: "busybox:1.37"}},
		}}
	}
	tests := map[string]func() *corev1.PodTemplateSpec{
		"no template":         func() *corev1.PodTemplateSpec { return nil },
		"everything named":    full,
		"no restartPolicy":    func() *corev1.PodTemplateSpec { t := full(); t.Spec.RestartPolicy = ""; return t },
		"a container's image": func() *corev1.PodTemplateSpec { t := full(); t.Spec.Containers[1].Image = ""; return t },
		"an init container's image": func() *corev1.PodTemplateSpec {
			t := full()
			t.Spec.InitContainers[0].Image = ""
			return t
		},
		"no init containers": func() *corev1.PodTemplateSpec { t := full(); t.Spec.InitContainers = nil; return t },
		"nothing named": func() *corev1.PodTemplateSpec {
			return &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}}}
		},
	}
	d := &AtDefaulter{DefaultImage: testDefaultImage}
	for name, template := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			at := &cnatv1beta1.At{
				ObjectMeta: metav1.ObjectMeta{Name: "match", Namespace: ns},
				// backoffLimit as the schema defaults it.
				Spec: cnatv1beta1.AtSpec{Schedule: "2099-01-01T00:00:00Z", Command: "true", BackoffLimit: ptr.To[int32](0), Template: template()},
			}
			want := at.DeepCopy()
			g.Expect(d.Default(t.Context(), want)).To(Succeed())
			changes := !equalSpecs(at, want)

			before := defaulterCalls(g)
			admitted := at.DeepCopy()
			g.Expect(adminClient.Create(t.Context(), admitted, client.DryRunAll)).To(Succeed())
			g.Expect(cmp.Diff(want.Spec, admitted.Spec)).To(BeEmpty(), "the At admitted is the one Default makes")
			called := defaulterCalls(g) > before
			g.Expect(called).To(Equal(changes), "the webhook is called exactly when Default changes something")
		})
	}
}

func equalSpecs(a, b *cnatv1beta1.At) bool {
	return a.Spec.Template.String() == b.Spec.Template.String()
}
