package webhook

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/test/testenv"
)

// TestRequesterPolicyCoversAts: the example policy of docs/security.md
// ("alice may run only images from registry.internal/") refuses alice's
// busybox Pod and, because it matches Ats too, her At with a busybox
// template or none, whose Pod cnat would create with its own
// ServiceAccount; her At of an image from registry.internal/ is admitted.
func TestRequesterPolicyCoversAts(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newNamespace(t)
	grantPods(t, ns, "alice")
	alice := clientAs(t, "alice")

	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "docs", "examples", "requester-policy.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	docs := strings.Split(string(raw), "\n---\n")
	g.Expect(docs).To(HaveLen(2))
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	g.Expect(yaml.UnmarshalStrict([]byte(docs[0]), policy)).To(Succeed())
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	g.Expect(yaml.UnmarshalStrict([]byte(docs[1]), binding)).To(Succeed())
	// This test's namespace only: other tests' alice is not held to it.
	binding.Spec.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
		MatchLabels: map[string]string{corev1.LabelMetadataName: ns},
	}}
	g.Expect(adminClient.Create(ctx, policy)).To(Succeed())
	t.Cleanup(func() { _ = adminClient.Delete(ctx, policy) })
	g.Expect(adminClient.Create(ctx, binding)).To(Succeed())
	t.Cleanup(func() { _ = adminClient.Delete(ctx, binding) })

	pod := func(image string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "alice-", Namespace: ns},
			Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "main", Image: image}}},
		}
	}
	// The policy takes effect once the API server has read it.
	g.Eventually(func() error { return alice.Create(ctx, pod("busybox:1.37")) }).WithTimeout(10 * time.Second).
		Should(MatchError(ContainSubstring("alice may run only images from registry.internal/")))

	newAt := func(name, image string) *cnatv1beta1.At {
		at := &cnatv1beta1.At{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec:       cnatv1beta1.AtSpec{Schedule: "2099-01-01T00:00:00Z", Command: "echo hello"},
		}
		if image != "" {
			at.Spec.Template = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}}}
		}
		return at
	}
	for name, image := range map[string]string{"busybox": "busybox:1.37", "no-template": "", "default-image": "-"} {
		at := newAt(name, image)
		if image == "-" {
			at.Spec.Template.Spec.Containers[0].Image = "" // the defaulting webhook writes busybox
		}
		err := alice.Create(ctx, at)
		g.Expect(err).To(Satisfy(apierrors.IsInvalid), name)
		g.Expect(err).To(MatchError(ContainSubstring("alice may run only images from registry.internal/")), name)
	}
	g.Expect(alice.Create(ctx, newAt("internal", "registry.internal/tools:1"))).To(Succeed())
	g.Expect(alice.Create(ctx, pod("registry.internal/tools:1"))).To(Succeed())
}
