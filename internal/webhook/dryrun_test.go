package webhook

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	utilcache "k8s.io/apimachinery/pkg/util/cache"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/atpod"
	"github.com/programming-kubernetes/cnat/test/testenv"
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

// A dry run's verdict that a Pod is valid (with its warnings) is reused
// for an At whose Pod differs only by the At's name and UID, in the same
// namespace, for VerdictFor; another template, command or namespace is
// another question, and a refusal or a check that could not be made is
// never reused.
func TestDryRunVerdictReusedForTheSamePodForAWhileOnly(t *testing.T) {
	g := NewWithT(t)
	dryRuns := 0
	refusals := map[string]error{
		"bad": apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "cnat-dry-run-x", field.ErrorList{
			field.Invalid(field.NewPath("spec", "containers").Index(0).Child("image"), "bad", "not an image"),
		}),
		"flaky": apierrors.NewInternalError(errors.New("etcd is away")),
		"quota": apierrors.NewForbidden(corev1.Resource("pods"), "cnat-dry-run-x", errors.New("exceeded quota: pods")),
	}
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(testScheme).Build(), interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			pod := obj.(*corev1.Pod)
			o := &client.CreateOptions{}
			o.ApplyOptions(opts)
			g.Expect(o.DryRun).To(Equal([]string{metav1.DryRunAll}), "only ever a dry run")
			dryRuns++
			return refusals[pod.Spec.Containers[0].Image]
		},
	})
	now := clocktesting.NewFakeClock(time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC))
	v := &AtValidator{Client: c, Pods: atpod.PodOptions{DefaultImage: testDefaultImage}, DryRunVerdicts: utilcache.NewLRUExpireCacheWithClock(RecentAnswers, now)}
	newAt := func(namespace, name, image string) *cnatv1beta1.At {
		return &cnatv1beta1.At{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: types.UID(name + "-0000-0000-0000-000000000000"), Generation: 1},
			Spec: cnatv1beta1.AtSpec{Schedule: "2099-01-01T00:00:00Z", Command: "echo hello", Template: &corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "main", Image: image}}},
			}},
		}
	}
	dryRun := func(at *cnatv1beta1.At) (admission.Warnings, error) { return v.dryRunPod(context.Background(), at) }

	g.Expect(dryRun(newAt("team", "first", "busybox"))).To(BeEmpty())
	g.Expect(dryRun(newAt("team", "a-second-at-with-a-much-longer-name", "busybox"))).To(BeEmpty())
	g.Expect(dryRuns).To(Equal(1), "the same Pod but for the At's name and UID: one dry run")

	g.Expect(dryRun(newAt("team", "first", "alpine"))).To(BeEmpty())
	g.Expect(dryRuns).To(Equal(2), "another template is another question")
	g.Expect(dryRun(newAt("other", "first", "busybox"))).To(BeEmpty())
	g.Expect(dryRuns).To(Equal(3), "another namespace is another question")
	otherCommand := newAt("team", "first", "busybox")
	otherCommand.Spec.Command = "echo bye"
	g.Expect(dryRun(otherCommand)).To(BeEmpty())
	g.Expect(dryRuns).To(Equal(4), "another command is another Pod")
	updated := newAt("team", "first", "busybox")
	updated.Generation = 2
	g.Expect(dryRun(updated)).To(BeEmpty())
	g.Expect(dryRuns).To(Equal(5), "everything the Pod carries but the At's name and UID is in the key")

	for i := range 2 {
		_, err := dryRun(newAt("team", fmt.Sprintf("bad-%d", i), "bad"))
		g.Expect(err).To(MatchError(ContainSubstring("spec.template.spec.containers[0].image")))
	}
	g.Expect(dryRuns).To(Equal(7), "a refusal is never reused: each At with it is dry-run")
	for i := range 2 {
		_, err := dryRun(newAt("team", fmt.Sprintf("flaky-%d", i), "flaky"))
		g.Expect(apierrors.IsInternalError(err)).To(BeTrue(), "a check that could not be made fails closed")
	}
	g.Expect(dryRuns).To(Equal(9), "a check that could not be made is never reused")

	warnings, err := dryRun(newAt("team", "quota-1", "quota"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(warnings).To(ConsistOf(ContainSubstring("exceeded quota")))
	again, err := dryRun(newAt("team", "quota-2", "quota"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(warnings), "a Pod refused only for now: its warning is reused with the verdict")
	g.Expect(dryRuns).To(Equal(10))

	// The namespace gains a policy that refuses the Pod's fields: within
	// VerdictFor, Ats of a template checked before are admitted; after it,
	// they are dry-run again and refused.
	refusals["busybox"] = refusals["bad"]
	now.Step(VerdictFor - time.Second)
	g.Expect(dryRun(newAt("team", "third", "busybox"))).To(BeEmpty())
	g.Expect(dryRuns).To(Equal(10))
	now.Step(2 * time.Second)
	_, err = dryRun(newAt("team", "fourth", "busybox"))
	g.Expect(err).To(MatchError(ContainSubstring("spec.template.spec.containers[0].image")), "after VerdictFor the Pod is dry-run again")
	g.Expect(dryRuns).To(Equal(11))
}
