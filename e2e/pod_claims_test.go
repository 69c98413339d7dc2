//go:build e2e

package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// podClaimsPolicy is the ValidatingAdmissionPolicy (and its binding) of
// kustomize/base/policy; the API server names both in a refusal.
const podClaimsPolicy = "ValidatingAdmissionPolicy 'cnat-pod-claims' with binding 'cnat-pod-claims' denied request"

// plainPod is a Pod anyone with `create pods` may make in a namespace that
// enforces the restricted Pod Security level, placed where the suite's Pods
// go, with none of cnat's claims.
func plainPod(namespace, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: onTestNodes(corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To[int64](65534),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:    "command",
				Image:   "busybox:1.37",
				Command: []string{"/bin/sh", "-c", "true"},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		}),
	}
}

// expectRefused checks that err is the API server's 403 from the policy,
// naming what was refused and whose it is.
func expectRefused(g Gomega, err error, claim string) {
	g.Expect(err).To(Satisfy(apierrors.IsForbidden), "refused as Forbidden")
	g.Expect(err).To(MatchError(ContainSubstring(podClaimsPolicy)))
	g.Expect(err).To(MatchError(ContainSubstring(claim)))
	g.Expect(err).To(MatchError(ContainSubstring("only the cnat controller (system:serviceaccount:cnat-system:cnat-controller) may")))
}

// TestPodClaims: a user who may do anything with Pods in a namespace and
// patch their status (but is not cnat's controller) can neither forge a Pod
// that claims to be an At's run nor change or strip the claims and records
// of cnat's own Pods, nor change what they run; the API server itself
// refuses (the ValidatingAdmissionPolicy cnat-pod-claims), while ordinary
// Pods and ordinary labels stay theirs, and the controller, as its
// ServiceAccount, still creates and releases its Pods (and labels them
// released, which a user may not do to a Pod that runs).
func TestPodClaims(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := testNamespace(t)
	const user = "e2e-pod-writer"
	g.Expect(admin.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"pods"},
			Verbs: []string{"create", "get", "list", "patch", "update", "delete"},
		}, {
			APIGroups: []string{""}, Resources: []string{"pods/status"},
			Verbs: []string{"get", "patch", "update"},
		}},
	})).To(Succeed())
	g.Expect(admin.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	})).To(Succeed())
	writer := impersonating(t, user)

	// An At that has not fired: the one a forged Pod would pretend to run.
	future := runs(ns, "future", in(time.Hour), "echo never", 0, time.Second)
	g.Expect(admin.Create(ctx, future)).To(Succeed())
	// And one that runs now, long enough to try its Pod while it runs.
	at := runs(ns, "claimed", in(0), "sleep 30", 0, 30*time.Second)
	g.Expect(admin.Create(ctx, at)).To(Succeed())

	t.Run("a Pod with cnat's at label is refused", func(t *testing.T) {
		g := NewWithT(t)
		pod := plainPod(ns, "forged-label")
		pod.Labels = map[string]string{cnatv1beta1.LabelAt: future.Name}
		expectRefused(g, writer.Create(ctx, pod), "the label "+cnatv1beta1.LabelAt+" marks a Pod as the run of an At")
	})

	t.Run("a Pod owned by an At, named as its first attempt, is refused", func(t *testing.T) {
		g := NewWithT(t)
		pod := plainPod(ns, future.Name+"-"+string(future.UID)[:8]+"-1")
		// No blockOwnerDeletion: that would need update on ats/finalizers
		// (OwnerReferencesPermissionEnforcement); without it, nothing but the
		// policy stands in the way.
		pod.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: cnatv1beta1.GroupVersion.String(), Kind: "At",
			Name: future.Name, UID: future.UID, Controller: ptr.To(true),
		}}
		expectRefused(g, writer.Create(ctx, pod), "the ownerReference to At "+future.Name)
	})

	t.Run("a Pod with the tracking finalizer is refused", func(t *testing.T) {
		g := NewWithT(t)
		pod := plainPod(ns, "forged-finalizer")
		pod.Finalizers = []string{cnatv1beta1.TrackingFinalizer}
		expectRefused(g, writer.Create(ctx, pod), "the finalizer "+cnatv1beta1.TrackingFinalizer)
	})

	t.Run("an ordinary Pod is allowed", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(writer.Create(ctx, plainPod(ns, "ordinary"))).To(Succeed())
	})

	t.Run("nothing forged is stored", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(podsOf(g, ns, future.Name)).To(BeEmpty(), "Pods labelled as the future At's")
		g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: future.Name + "-" + string(future.UID)[:8] + "-1"}, &corev1.Pod{})).
			To(Satisfy(apierrors.IsNotFound), "the future At's attempt-1 Pod")
		g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "forged-finalizer"}, &corev1.Pod{})).
			To(Satisfy(apierrors.IsNotFound), "the Pod with the tracking finalizer")
		g.Expect(get(g, ns, future.Name).Status.Phase).To(Equal(cnatv1beta1.PhasePending))
	})

	// cnat's own Pod, while it runs and still carries the finalizer.
	var pod corev1.Pod
	g.Eventually(func(g Gomega) corev1.PodPhase {
		pods := podsOf(g, ns, at.Name)
		g.Expect(pods).To(HaveLen(1))
		pod = pods[0]
		return pod.Status.Phase
	}, timeout).Should(Equal(corev1.PodRunning))
	g.Expect(pod.Finalizers).To(ContainElement(cnatv1beta1.TrackingFinalizer))
	key := client.ObjectKeyFromObject(&pod)

	t.Run("removing or changing the at label of cnat's Pod is refused", func(t *testing.T) {
		g := NewWithT(t)
		for _, value := range []string{"null", `"someone-else"`} {
			patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+cnatv1beta1.LabelAt+`":`+value+`}}}`))
			expectRefused(g, writer.Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: ns}}, patch),
				"the label "+cnatv1beta1.LabelAt+" marks a Pod as the run of an At")
		}
	})

	t.Run("removing the tracking finalizer of cnat's Pod is refused", func(t *testing.T) {
		g := NewWithT(t)
		live := &corev1.Pod{}
		g.Expect(writer.Get(ctx, key, live)).To(Succeed())
		live.Finalizers = slices.DeleteFunc(live.Finalizers, func(f string) bool { return f == cnatv1beta1.TrackingFinalizer })
		err := writer.Update(ctx, live)
		expectRefused(g, err, "the finalizer "+cnatv1beta1.TrackingFinalizer)
		g.Expect(err).To(MatchError(ContainSubstring("may remove it")))
	})

	t.Run("labelling cnat's running Pod released is refused", func(t *testing.T) {
		g := NewWithT(t)
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+cnatv1beta1.LabelReleased+`":"true"}}}`))
		expectRefused(g, writer.Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: ns}}, patch),
			"the label "+cnatv1beta1.LabelReleased+" says the At has recorded a Pod's run")
	})

	t.Run("labelling cnat's running Pod released through pods/status is refused", func(t *testing.T) {
		g := NewWithT(t)
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+cnatv1beta1.LabelReleased+`":"true"}}}`))
		expectRefused(g, writer.Status().Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: ns}}, patch),
			"the label "+cnatv1beta1.LabelReleased+" says the At has recorded a Pod's run")
	})

	t.Run("changing cnat's annotation on its Pod is refused", func(t *testing.T) {
		g := NewWithT(t)
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+cnatv1beta1.AnnotationSpecHash+`":"0000000000000000"}}}`))
		expectRefused(g, writer.Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: ns}}, patch),
			"the annotation "+cnatv1beta1.AnnotationSpecHash)
	})

	t.Run("changing the image of cnat's running Pod is refused", func(t *testing.T) {
		g := NewWithT(t)
		patch := client.RawPatch(types.StrategicMergePatchType,
			[]byte(`{"spec":{"containers":[{"name":"`+pod.Spec.Containers[0].Name+`","image":"docker.io/library/busybox:1.37"}]}}`))
		expectRefused(g, writer.Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: ns}}, patch),
			"spec.containers of an At's Pod is what the At runs")
	})

	t.Run("an ordinary label on cnat's Pod is allowed", func(t *testing.T) {
		g := NewWithT(t)
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"e2e"}}}`))
		g.Expect(writer.Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: ns}}, patch)).To(Succeed())
	})

	// The claims are as the controller made them.
	live := &corev1.Pod{}
	g.Expect(admin.Get(ctx, key, live)).To(Succeed())
	g.Expect(live.Labels).To(HaveKeyWithValue(cnatv1beta1.LabelAt, at.Name))
	g.Expect(live.Labels).To(HaveKeyWithValue("team", "e2e"))
	g.Expect(live.Finalizers).To(ContainElement(cnatv1beta1.TrackingFinalizer))
	g.Expect(live.Labels).NotTo(HaveKey(cnatv1beta1.LabelReleased))

	// And the controller, as its ServiceAccount, still runs the At to its end
	// and releases its Pod (removes the finalizer).
	g.Eventually(phaseOf(ns, at.Name), timeout).Should(Equal(cnatv1beta1.PhaseSucceeded))
	done := get(g, ns, at.Name)
	g.Expect(done.Status.PodName).To(Equal(key.Name))
	g.Expect(done.Status.ExitCode).To(Equal(ptr.To[int32](0)))
	g.Eventually(func(g Gomega) []string {
		g.Expect(admin.Get(ctx, key, live)).To(Succeed())
		return live.Finalizers
	}, timeout).ShouldNot(ContainElement(cnatv1beta1.TrackingFinalizer), "the controller released its Pod")
	g.Expect(live.Labels).To(HaveKeyWithValue(cnatv1beta1.LabelReleased, "true"), "and labelled it released, in the same patch")
}
