package controller

import (
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	. "github.com/onsi/gomega"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// TestAttackStrippedManagedFieldsFreezeTheAt: a co-tenant with `patch ats`
// only (no ats/status, no pods, no pods/status) clears the At's
// metadata.managedFields while its Pod runs, with a metadata-only patch
// (`{"metadata":{"managedFields":[{}]}}`: the spec and the author annotation
// are unchanged, so cnat's webhooks admit it as they admit any label
// change). The controller writes the status by server-side apply
// (apply.Status) and relies on the apply to remove what it leaves out. With
// its ownership gone, the API server gives the live status fields to
// "before-first-apply" on the next apply; when the run ends, the
// controller's status drops the Reconciling condition, the apply removes
// only the fields the controller alone owns (reason, message), and the
// result is a condition the CRD refuses: 422 on every status write, for
// good. The At says "Running" forever after its command exited 0, and its
// Pod keeps the tracking finalizer.
//
// Breaks: the README table "exited 0 … Succeeded (Completed)" and "Nothing
// lost from the books" (the finalizer goes once the status records the run,
// which it never does now); the At's status says a Pod runs that has
// finished. (The controller does keep looking — each failed write is retried
// within 30 s — so the letter of "never silent" holds; every look fails.)
// The threat table has no row for a user who may patch Ats: the status "is
// the controller's by RBAC". Shown admitted by cnat's webhooks too (envtest
// with the webhooks, ad hoc: the patch succeeds, the author unchanged).
// Shown to pass with the patch replaced by an ordinary label change.
func TestAttackStrippedManagedFieldsFreezeTheAt(t *testing.T) {
	h := newHarness(t)
	// The co-tenant: may patch Ats in the namespace, nothing on their status.
	const user = "mallory-ats"
	h.g.Expect(apiClient.Create(h.ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "ats", Namespace: h.ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{cnatv1beta1.GroupVersion.Group}, Resources: []string{"ats"}, Verbs: []string{"get", "list", "create", "update", "patch"}},
	}})).To(Succeed())
	h.g.Expect(apiClient.Create(h.ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "ats", Namespace: h.ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "ats"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	})).To(Succeed())
	cfg := rest.CopyConfig(testConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	mallory, err := client.New(cfg, client.Options{Scheme: testScheme})
	h.g.Expect(err).NotTo(HaveOccurred())

	// An At with a retry (backoffLimit 1): attempt 1 fails, the At is
	// Retrying.
	const name = "frozen"
	h.createAt(name, cnatv1beta1.AtSpec{Schedule: schedule(start), Command: "sleep 600", BackoffLimit: ptr.To[int32](1)})
	h.reconcile(name)
	h.finishPod(h.podName(name, 1), 1)
	h.reconcile(name)
	h.g.Expect(h.at(name).Status.Reason).To(Equal(cnatv1beta1.ReasonRetrying))

	// The co-tenant's metadata-only patch, through the main resource.
	at := &cnatv1beta1.At{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns}}
	h.g.Expect(mallory.Patch(h.ctx, at, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"managedFields":[{}]}}`)))).
		To(Succeed(), "a user with patch on ats strips the status writer's managed fields")

	// Attempt 2 starts and runs, and the At says so.
	h.clock.Step(time.Minute)
	h.reconcile(name)
	podName := h.podName(name, 2)
	h.runPod(podName)
	h.reconcile(name)
	running := h.at(name)
	h.g.Expect(running.Status.Phase).To(Equal(cnatv1beta1.PhaseRunning))
	h.g.Expect(running.Status.Attempts).To(Equal(int32(2)))

	// The command exits 0; the controller looks, and looks again (its
	// retries, up to 30 s apart), for a minute.
	h.finishPod(podName, 0)
	var errs []error
	for range 3 {
		if _, err := h.r.Reconcile(h.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: h.ns, Name: name}}); err != nil {
			errs = append(errs, err)
		}
		h.clock.Step(30 * time.Second)
	}
	for _, err := range errs {
		t.Logf("reconcile: %v", err)
	}
	final := h.at(name)
	t.Logf("the At a minute after its command exited 0: phase %s, reason %s, message %q", final.Status.Phase, final.Status.Reason, final.Status.Message)
	h.g.Expect(final.Status.Phase).To(Equal(cnatv1beta1.PhaseSucceeded), "the command exited 0")
	h.g.Expect(h.pod(podName).Finalizers).NotTo(ContainElement(cnatv1beta1.TrackingFinalizer), "released once its run is recorded")
	h.g.Expect(errs).To(BeEmpty())
}

// TestAttackStrippedManagedFieldsLeaveTheAtReconciling: the same patch on
// `ats` while the At's only attempt runs; the command exits 0. The At is
// Succeeded, but the controller's apply cannot remove the condition
// Reconciling it no longer owns: it stays True ("Pod … runs attempt 1"), so
// kstatus (Flux, fluxcd/pkg/ssa) reads the finished At as InProgress for
// good.
//
// Breaks: README "kstatus … reads a Pending or Succeeded At as Current".
func TestAttackStrippedManagedFieldsLeaveTheAtReconciling(t *testing.T) {
	h := newHarness(t)
	const user = "mallory-ats"
	h.g.Expect(apiClient.Create(h.ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "ats", Namespace: h.ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{cnatv1beta1.GroupVersion.Group}, Resources: []string{"ats"}, Verbs: []string{"get", "patch"}},
	}})).To(Succeed())
	h.g.Expect(apiClient.Create(h.ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "ats", Namespace: h.ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "ats"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	})).To(Succeed())
	cfg := rest.CopyConfig(testConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	mallory, err := client.New(cfg, client.Options{Scheme: testScheme})
	h.g.Expect(err).NotTo(HaveOccurred())

	const name = "reconciling"
	podName := h.runningAt(name)
	at := &cnatv1beta1.At{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns}}
	h.g.Expect(mallory.Patch(h.ctx, at, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"managedFields":[{}]}}`)))).To(Succeed())
	h.finishPod(podName, 0)
	h.reconcile(name)
	final := h.at(name)
	h.g.Expect(final.Status.Phase).To(Equal(cnatv1beta1.PhaseSucceeded))
	for _, c := range final.Status.Conditions {
		t.Logf("condition %s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message)
		if c.Type == "Reconciling" {
			h.g.Expect(c.Status).NotTo(Equal(metav1.ConditionTrue), "a Succeeded At is not Reconciling")
		}
	}
}
