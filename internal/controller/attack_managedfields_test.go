package controller

import (
	"context"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	. "github.com/onsi/gomega"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/atcache"
)

// TestAttackStrippedManagedFieldsFreezeTheAt: a co-tenant with `patch ats`
// only (no ats/status, no pods) clears the At's metadata.managedFields with
// a metadata-only patch (`{"metadata":{"managedFields":[{}]}}`, which cnat's
// webhooks admit as any label change) while the At retries. The API server
// then gives every live status field to "before-first-apply", and an apply
// of the status no longer removes what it leaves out: the condition the
// next status drops would lose its reason and message but keep its type,
// which the CRD refuses (422 on every write, the At Running for good after
// its command exited 0). The status writer must notice and write the
// status whole. The controller reads the At as its store keeps it
// (atcache.Trim), which must keep who owns the status.
func TestAttackStrippedManagedFieldsFreezeTheAt(t *testing.T) {
	h := newHarness(t)
	mallory := h.atPatcher()
	h.r = h.newReconciler(interceptor.Funcs{Get: getTrimmed})

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
	errs := h.reconcileForAMinute(name)
	final := h.at(name)
	t.Logf("the At a minute after its command exited 0: phase %s, reason %s, message %q", final.Status.Phase, final.Status.Reason, final.Status.Message)
	h.g.Expect(final.Status.Phase).To(Equal(cnatv1beta1.PhaseSucceeded), "the command exited 0")
	h.g.Expect(h.pod(podName).Finalizers).NotTo(ContainElement(cnatv1beta1.TrackingFinalizer), "released once its run is recorded")
	h.g.Expect(errs).To(BeEmpty())
}

// TestAttackStrippedManagedFieldsLeaveTheAtReconciling: the same patch
// while the At's only attempt runs; the command exits 0. The At must be
// Succeeded without the condition Reconciling the status no longer has, or
// kstatus (Flux, fluxcd/pkg/ssa) reads the finished At as InProgress for
// good.
func TestAttackStrippedManagedFieldsLeaveTheAtReconciling(t *testing.T) {
	h := newHarness(t)
	mallory := h.atPatcher()
	h.r = h.newReconciler(interceptor.Funcs{Get: getTrimmed})

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

// atPatcher is a client of a user who may get, list, create, update and
// patch Ats in the harness's namespace, and nothing else.
func (h *harness) atPatcher() client.Client {
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
	c, err := client.New(cfg, client.Options{Scheme: testScheme})
	h.g.Expect(err).NotTo(HaveOccurred())
	return c
}

// getTrimmed reads an At as the controller's store keeps it (atcache.Trim).
func getTrimmed(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := c.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if at, ok := obj.(*cnatv1beta1.At); ok {
		atcache.Trim(at)
	}
	return nil
}

// TestAttackStrippedManagedFieldsWhilePending: the same patch before the
// At's time. The next status (Running) sets every field the live one has,
// so it is applied, and the API server gives the fields both own to
// "before-first-apply" as well; the outcome drops the condition
// Reconciling, which the apply cannot remove while that manager owns it
// too. The store must keep that ownership for the writer to see it.
func TestAttackStrippedManagedFieldsWhilePending(t *testing.T) {
	h := newHarness(t)
	mallory := h.atPatcher()
	h.r = h.newReconciler(interceptor.Funcs{Get: getTrimmed})

	const name = "pending"
	h.createAt(name, cnatv1beta1.AtSpec{Schedule: schedule(start.Add(time.Minute)), Command: "sleep 600"})
	h.reconcile(name)
	h.g.Expect(h.at(name).Status.Reason).To(Equal(cnatv1beta1.ReasonScheduled))
	at := &cnatv1beta1.At{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns}}
	h.g.Expect(mallory.Patch(h.ctx, at, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"managedFields":[{}]}}`)))).To(Succeed())
	// Its author moves it a minute later: the same fields, other values.
	h.g.Expect(apiClient.Patch(h.ctx, at, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"schedule":"`+schedule(start.Add(2*time.Minute))+`"}}`)))).To(Succeed())
	h.reconcile(name)

	h.clock.Step(2 * time.Minute)
	h.reconcile(name)
	podName := h.podName(name, 1)
	h.runPod(podName)
	h.reconcile(name)
	h.g.Expect(h.at(name).Status.Phase).To(Equal(cnatv1beta1.PhaseRunning))
	h.finishPod(podName, 0)
	h.reconcile(name)
	final := h.at(name)
	h.g.Expect(final.Status.Phase).To(Equal(cnatv1beta1.PhaseSucceeded))
	h.g.Expect(final.Status.Conditions).NotTo(ContainElement(HaveField("Type", "Reconciling")), "a Succeeded At is not Reconciling")
	h.g.Expect(h.pod(podName).Finalizers).NotTo(ContainElement(cnatv1beta1.TrackingFinalizer))
}

// reconcileForAMinute reconciles the At as the controller's retries would,
// three times 30 s apart, and returns (and logs) their errors.
func (h *harness) reconcileForAMinute(name string) []error {
	h.t.Helper()
	var errs []error
	for range 3 {
		if _, err := h.r.Reconcile(h.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: h.ns, Name: name}}); err != nil {
			h.t.Logf("reconcile: %v", err)
			errs = append(errs, err)
		}
		h.clock.Step(30 * time.Second)
	}
	return errs
}
