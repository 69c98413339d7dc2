package webhook

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/testenv"
)

// TestPodRefusedByAPolicyIsNotAnInvalidAt: a ValidatingAdmissionPolicy of
// the cluster's refuses Pods in the namespace, answering 422 Invalid as
// policies do by default. That is not the At's spec being wrong (the
// policy may be lifted before the At's time): the At is admitted (with a
// warning), not refused as invalid. A Pod the API server's own validation
// refuses still refuses the At, naming its field.
func TestPodRefusedByAPolicyIsNotAnInvalidAt(t *testing.T) {
	ctx := t.Context()
	g := NewWithT(t)
	ns := newNamespace(t)
	policy, binding := testenv.DenyPodsPolicy(ns, "")
	g.Expect(adminClient.Create(ctx, policy)).To(Succeed())
	g.Expect(adminClient.Create(ctx, binding)).To(Succeed())
	t.Cleanup(func() {
		_ = adminClient.Delete(ctx, binding)
		_ = adminClient.Delete(ctx, policy)
	})
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	g.Eventually(func() error { return adminClient.Create(ctx, probe.DeepCopy(), client.DryRunAll) }, 30*time.Second, 100*time.Millisecond).
		Should(HaveOccurred(), "the policy is in force")

	at := &cnatv1beta1.At{
		ObjectMeta: metav1.ObjectMeta{Name: "later", Namespace: ns},
		Spec:       cnatv1beta1.AtSpec{Schedule: "2099-01-01T00:00:00Z", Command: "echo later"},
	}
	g.Expect(adminClient.Create(ctx, at)).To(Succeed(), "admitted: the policy, not the spec, refuses its Pod for now")

	bad := &cnatv1beta1.At{
		ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: ns},
		Spec: cnatv1beta1.AtSpec{Schedule: "2099-01-01T00:00:00Z", Template: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: "busybox", Env: []corev1.EnvVar{{Name: "A=B", Value: "x"}}}},
		}}},
	}
	g.Expect(adminClient.Create(ctx, bad)).To(MatchError(ContainSubstring("spec.template.spec.containers[0].env[0].name")),
		"the Pod's own fields still refuse the At, policy or not")
}
