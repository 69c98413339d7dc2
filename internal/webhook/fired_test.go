package webhook

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/atpod"
	"github.com/programming-kubernetes/cnat/internal/author"
)

// TestImmutableOnceItsPodExists: the controller creates an At's Pod first and
// records the attempt in the status when the Pod's watch event comes back.
// In between, the status counts no attempt (so the CRD's CEL rule lets the
// spec change), but the Pod runs: the validator reads the Pod and refuses.
func TestImmutableOnceItsPodExists(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newNamespace(t)
	at := &cnatv1beta1.At{
		ObjectMeta: metav1.ObjectMeta{Name: "in-flight", Namespace: ns},
		// Far ahead, so the suite's controller does not fire it itself.
		Spec: cnatv1beta1.AtSpec{Schedule: time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339), Command: "echo before"},
	}
	g.Expect(adminClient.Create(ctx, at)).To(Succeed())
	v := &AtValidator{Client: adminClient, Reader: adminClient, Pods: atpod.PodOptions{DefaultImage: "busybox:1.37"}}
	// The update as the At's author asks for it, so the author is kept.
	admin, _, err := author.Of(at)
	g.Expect(err).NotTo(HaveOccurred())
	ctx = admission.NewContextWithRequest(ctx, admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Update, UserInfo: admin}})
	changed := at.DeepCopy()
	changed.Spec.Command = "echo after"

	_, err = v.ValidateUpdate(ctx, at, changed)
	g.Expect(err).NotTo(HaveOccurred(), "no Pod yet: the spec may change")

	foreign := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: atpod.PodName(at, 1), Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	g.Expect(adminClient.Create(ctx, foreign)).To(Succeed())
	_, err = v.ValidateUpdate(ctx, at, changed)
	g.Expect(err).NotTo(HaveOccurred(), "a Pod of that name that is not the At's started nothing")
	g.Expect(adminClient.Delete(ctx, foreign, client.GracePeriodSeconds(0))).To(Succeed())
	g.Eventually(func() error {
		return adminClient.Get(ctx, client.ObjectKeyFromObject(foreign), &corev1.Pod{})
	}).Should(Satisfy(apierrors.IsNotFound))

	pod := atpod.NewPod(at, 1, time.Now(), atpod.PodOptions{DefaultImage: "busybox:1.37"})
	pod.Finalizers = nil // so the test's namespace can go
	// Labelled released, which the controller's cache selects out, the Pod
	// is never seen by the suite's controller, which never records its
	// attempt: the window between the Pod's creation and the status write,
	// held open. The Pod is still the At's run (atpod.RunOf), which is all
	// the validator asks.
	pod.Labels[cnatv1beta1.LabelReleased] = "true"
	g.Expect(adminClient.Create(ctx, pod)).To(Succeed())
	live := &cnatv1beta1.At{}
	g.Expect(adminClient.Get(ctx, client.ObjectKeyFromObject(at), live)).To(Succeed())
	g.Expect(live.Status.Attempts).To(BeZero(), "the API server's At counts no attempt: only its Pod says it has fired")
	changed = live.DeepCopy()
	changed.Spec.Command = "echo after"
	_, err = v.ValidateUpdate(ctx, live, changed)
	g.Expect(err).To(Satisfy(apierrors.IsInvalid))
	g.Expect(err).To(MatchError(ContainSubstring("spec.command: Forbidden: spec.command cannot change once the At has fired")))

	suspended := live.DeepCopy()
	suspended.Spec.Suspend = ptr.To(true)
	_, err = v.ValidateUpdate(ctx, live, suspended)
	g.Expect(err).NotTo(HaveOccurred(), "what does not change the run may still change")
}
