package controller

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/test/testenv"
)

// A refuser is something in the cluster, not in the At, that refuses the
// At's Pod for a while, as the API server's own admission would.
type refuser struct {
	name string
	// refuse installs it in namespace ns and returns what lifts it.
	refuse func(h *harness) (lift func())
	// wantReason and wantMessage are what the At must say meanwhile.
	wantReason, wantMessage string
}

// TestRefusedPodsAreJudgedByMeaning: whatever HTTP code refuses an At's
// Pod — a ValidatingAdmissionPolicy's 422 or 403, a Pod webhook that is
// down (500), a quota (403) — the At says why at once, with the refusal's
// own message and one Warning Event; it is retried (never a terminal
// InvalidSpec), runs once the refusal is lifted, and is Missed if its
// starting deadline passes first. Judged from the API server.
func TestRefusedPodsAreJudgedByMeaning(t *testing.T) {
	refusers := []refuser{
		{name: "policy-invalid", refuse: denyingPolicy(""), wantReason: cnatv1beta1.ReasonPodForbidden, wantMessage: "ValidatingAdmissionPolicy"},
		{name: "policy-forbidden", refuse: denyingPolicy(metav1.StatusReasonForbidden), wantReason: cnatv1beta1.ReasonPodForbidden, wantMessage: "ValidatingAdmissionPolicy"},
		{name: "webhook-down", refuse: webhookDown, wantReason: cnatv1beta1.ReasonPodCreateFailed, wantMessage: "failed calling webhook"},
		{name: "quota", refuse: fullQuota, wantReason: cnatv1beta1.ReasonPodForbidden, wantMessage: "exceeded quota"},
	}
	for _, rf := range refusers {
		t.Run(rf.name, func(t *testing.T) {
			h := newHarness(t)
			lift := rf.refuse(h)
			h.createAt("lifted", cnatv1beta1.AtSpec{Schedule: schedule(start), Command: "echo", StartingDeadlineSeconds: ptr.To[int64](300)})
			h.createAt("missed", cnatv1beta1.AtSpec{Schedule: schedule(start), Command: "echo", StartingDeadlineSeconds: ptr.To[int64](60)})

			for _, name := range []string{"lifted", "missed"} {
				for range 2 {
					_, err := h.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: h.ns, Name: name}})
					h.g.Expect(err).To(HaveOccurred(), "returned, to be retried with backoff")
					h.g.Expect(reconcile.TerminalError(nil)).NotTo(MatchError(err), "not terminal")
				}
				at := h.at(name)
				h.g.Expect(at.Status.Phase).To(Equal(cnatv1beta1.PhasePending))
				h.g.Expect(at.Status.Reason).To(Equal(rf.wantReason))
				h.g.Expect(at.Status.Message).To(ContainSubstring(rf.wantMessage))
				h.g.Expect(condition(at, cnatv1beta1.ConditionReady).Status).To(Equal(metav1.ConditionFalse))
				h.g.Expect(condition(at, cnatv1beta1.ConditionReconciling).Status).To(Equal(metav1.ConditionTrue))
				h.g.Expect(condition(at, cnatv1beta1.ConditionStalled)).To(BeNil(), "not stalled: it is retried")
			}
			var warnings []string
			h.g.Expect(h.events()).To(ContainElement(HavePrefix("Warning "+rf.wantReason), &warnings))
			h.g.Expect(warnings).To(HaveLen(2), "one Warning per At, though each was refused twice")

			h.clock.Step(2 * time.Minute)
			h.reconcile("missed")
			h.g.Expect(h.at("missed").Status.Phase).To(Equal(cnatv1beta1.PhaseMissed), "its deadline passed while refused")

			lift()
			h.g.Eventually(func(g Gomega) {
				_, err := h.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: h.ns, Name: "lifted"}})
				g.Expect(err).NotTo(HaveOccurred())
			}, 30*time.Second, 200*time.Millisecond).Should(Succeed(), "runs once the refusal is lifted (the API server learns of it through informers)")
			h.reconcile("lifted")
			h.g.Expect(h.pods("lifted")).To(HaveLen(1))
			h.g.Expect(h.at("lifted").Status.Phase).To(Equal(cnatv1beta1.PhaseRunning))
			h.g.Expect(h.pods("missed")).To(BeEmpty())
		})
	}
}

// TestInvalidPodIsRetriedUntilItsDeadline: the API server's validation of
// the Pod's fields refuses it at its time (a spec that the admission
// webhook's dry run would have refused, here admitted without it): said on
// the At as PodInvalid and retried until the starting deadline, since what
// shapes the Pod (a LimitRange, a mutating policy) changes without the spec.
func TestInvalidPodIsRetriedUntilItsDeadline(t *testing.T) {
	h := newHarness(t)
	h.createAt("bad", cnatv1beta1.AtSpec{Schedule: schedule(start), StartingDeadlineSeconds: ptr.To[int64](60), Template: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "main", Image: "busybox", Env: []corev1.EnvVar{{Name: "A=B", Value: "x"}}}},
	}}})
	_, err := h.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: h.ns, Name: "bad"}})
	h.g.Expect(err).To(HaveOccurred())
	h.g.Expect(reconcile.TerminalError(nil)).NotTo(MatchError(err), "not terminal")
	at := h.at("bad")
	h.g.Expect(at.Status.Reason).To(Equal(cnatv1beta1.ReasonPodInvalid))
	h.g.Expect(at.Status.Message).To(ContainSubstring("env[0].name"))
	h.clock.Step(2 * time.Minute)
	h.reconcile("bad")
	h.g.Expect(h.at("bad").Status.Phase).To(Equal(cnatv1beta1.PhaseMissed))
}

// TestRetryBackoffIsBounded: the wait between retries of a refused Pod
// never exceeds maxRetryDelay, however often it was refused and however
// many Ats of its namespace fail: up to 300 share namespaceRetryRate at the
// normal priority; beyond, they keep maxRetryDelay at low priority. What
// counts is the Ats failing now: another namespace's thousands leave this
// one's first retry at retryBaseDelay and the normal priority; a thousand
// of its own, once they succeeded or were deleted, leave nothing behind;
// one At reconciled a thousand times (its edits) counts once.
func TestRetryBackoffIsBounded(t *testing.T) {
	g := NewWithT(t)
	shares := newNamespaceShares()
	limiter := retryLimiter(shares)
	at := func(ns string, name any) reconcile.Request {
		return reconcile.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: fmt.Sprint(name)}}
	}
	var last time.Duration
	for range 40 {
		last = limiter.When(at("ns", "at"))
	}
	g.Expect(last).To(Equal(maxRetryDelay))
	for i := range 299 {
		limiter.When(at("ns", i))
	}
	g.Expect(limiter.When(at("ns", "at"))).To(Equal(maxRetryDelay), "300 failing Ats: still every 30 s")
	g.Expect(shares.priority(at("ns", "at"))).To(Equal(0), "300 failing Ats: at the normal priority")
	for i := range 3000 {
		for range 10 {
			g.Expect(limiter.When(at("co-tenant", i))).To(BeNumerically("<=", maxRetryDelay), "however many fail")
		}
	}
	g.Expect(limiter.When(at("other", "first"))).To(Equal(retryBaseDelay), "another namespace's thousands")
	g.Expect(shares.priority(at("other", "first"))).To(Equal(0), "another namespace's thousands")
	g.Expect(shares.priority(at("co-tenant", "new"))).To(Equal(handler.LowPriority), "3 001 failing Ats: behind all other work")
	g.Expect(limiter.When(at("co-tenant", "new"))).To(Equal(maxRetryDelay), "3 001 failing Ats: still every 30 s")
	for i := range 3000 {
		limiter.Forget(at("co-tenant", i))
	}
	g.Expect(shares.priority(at("co-tenant", "new"))).To(Equal(0), "the normal priority again once the others no longer fail")
	limiter.Forget(at("co-tenant", "new"))
	g.Expect(limiter.When(at("co-tenant", "after"))).To(Equal(retryBaseDelay), "no wait left behind by Ats that no longer fail")
	for range 1000 {
		limiter.When(at("edited", "one"))
	}
	g.Expect(limiter.When(at("edited", "two"))).To(Equal(retryBaseDelay), "one At's many reconciles count once")
}

// denyingPolicy refuses every Pod in the harness's namespace with a
// ValidatingAdmissionPolicy, answering with reason (the API server's
// default, Invalid, when empty).
func denyingPolicy(reason metav1.StatusReason) func(h *harness) func() {
	return func(h *harness) func() {
		policy, binding := testenv.DenyPodsPolicy(h.ns, reason)
		h.g.Expect(apiClient.Create(h.ctx, policy)).To(Succeed())
		h.g.Expect(apiClient.Create(h.ctx, binding)).To(Succeed())
		h.waitUntilPodsRefused()
		return func() {
			h.g.Expect(apiClient.Delete(h.ctx, binding)).To(Succeed())
			h.g.Expect(apiClient.Delete(h.ctx, policy)).To(Succeed())
		}
	}
}

// webhookDown registers a validating webhook for Pods in the harness's
// namespace that nothing serves, failing closed: the API server answers
// 500, failed calling webhook.
func webhookDown(h *harness) func() {
	config := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "down-" + h.ns},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "pods.down.example.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/validate")},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			NamespaceSelector:       namespaceSelector(h.ns),
			TimeoutSeconds:          ptr.To[int32](2),
		}},
	}
	h.g.Expect(apiClient.Create(h.ctx, config)).To(Succeed())
	h.waitUntilPodsRefused()
	return func() { h.g.Expect(apiClient.Delete(h.ctx, config)).To(Succeed()) }
}

// fullQuota allows no Pod in the harness's namespace. envtest runs no
// quota controller, so the test writes the quota's status as it would.
func fullQuota(h *harness) func() {
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "pods", Namespace: h.ns},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}},
	}
	h.g.Expect(apiClient.Create(h.ctx, quota)).To(Succeed())
	setQuota := func(hard string) {
		quota.Spec.Hard = corev1.ResourceList{corev1.ResourcePods: resource.MustParse(hard)}
		h.g.Expect(apiClient.Update(h.ctx, quota)).To(Succeed())
		quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}
		h.g.Expect(apiClient.Status().Update(h.ctx, quota)).To(Succeed())
	}
	setQuota("0")
	h.waitUntilPodsRefused()
	return func() { setQuota("10") }
}

func namespaceSelector(ns string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}
}

// waitUntilPodsRefused waits until the API server refuses a Pod in the
// harness's namespace: policies, webhooks and quotas reach admission through
// informers.
func (h *harness) waitUntilPodsRefused() {
	h.t.Helper()
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: h.ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	// The API server takes policies and webhooks in through informers: on a
	// loaded machine that can take seconds.
	h.g.Eventually(func() error {
		return apiClient.Create(h.ctx, probe.DeepCopy(), client.DryRunAll)
	}, 30*time.Second, 100*time.Millisecond).Should(HaveOccurred(), fmt.Sprintf("Pods refused in %s", h.ns))
}
