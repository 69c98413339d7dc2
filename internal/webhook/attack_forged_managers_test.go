package webhook

import (
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1alpha1 "github.com/programming-kubernetes/cnat/api/v1alpha1"
	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/controller/atstatus"
)

// TestAttackForgedStatusManagerThroughV1alpha1: the attack of
// internal/controller's TestAttackForgedStatusManagerLeavesTheAtReconciling
// against the whole of cnat — its webhooks, the conversion and the running
// controller — written through v1alpha1 by a user who may get and patch
// Ats and nothing else (no ats/status, no Pods). While the At's command
// runs, mallory reads the At through v1alpha1 and sends its managedFields
// back with the status writer's entry (cnat-controller-status, Apply,
// subresource status) moved to the main resource. The webhooks admit it
// (a metadata change; the author is kept), the conversion passes metadata
// through, and the API server stores the entries as sent. The command
// exits 0: the At must be Succeeded, and no longer Reconciling.
func TestAttackForgedStatusManagerThroughV1alpha1(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newNamespace(t)
	const user = "mallory-managed-fields"
	grantInNamespace(t, ns, user, rbacv1.PolicyRule{
		APIGroups: []string{cnatv1beta1.GroupVersion.Group}, Resources: []string{"ats"}, Verbs: []string{"get", "list", "patch"},
	})
	mallory := impersonatingClient(t, user)

	const name = "forged-v1alpha1"
	pod := runningAtPod(t, ns, name)
	bindAndRun(g, ctx, pod)
	at := &cnatv1beta1.At{}
	g.Eventually(func() string {
		g.Expect(adminClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, at)).To(Succeed())
		return at.Status.Reason
	}).WithTimeout(15*time.Second).Should(Equal(cnatv1beta1.ReasonRunning), "the controller sees the command run")

	// Mallory, through v1alpha1.
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(cnatv1alpha1.GroupVersion.String())
	obj.SetKind("At")
	g.Expect(mallory.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)).To(Succeed())
	entries := obj.GetManagedFields()
	forged := false
	for i := range entries {
		if entries[i].Manager == atstatus.StatusFieldManager && entries[i].Subresource == "status" {
			entries[i].Subresource = ""
			forged = true
		}
	}
	g.Expect(forged).To(BeTrue(), "the At has the status writer's entry: %v", entries)
	raw, err := json.Marshal(map[string]any{"metadata": map[string]any{"managedFields": entries}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mallory.Patch(ctx, obj, client.RawPatch("application/merge-patch+json", raw))).
		To(Succeed(), "cnat's webhooks and the API server admit a managedFields patch through v1alpha1")
	g.Expect(adminClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, at)).To(Succeed())
	for _, e := range at.ManagedFields {
		t.Logf("stored managedFields entry: manager %q, operation %s, apiVersion %s, subresource %q", e.Manager, e.Operation, e.APIVersion, e.Subresource)
	}

	playKubelet(ctx, g, ns, pod.Name, 0)
	g.Eventually(func() cnatv1beta1.Phase {
		g.Expect(adminClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, at)).To(Succeed())
		return at.Status.Phase
	}).WithTimeout(15*time.Second).Should(Equal(cnatv1beta1.PhaseSucceeded), "the command exited 0")
	for _, c := range at.Status.Conditions {
		t.Logf("condition %s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message)
	}
	g.Consistently(func() []metav1.Condition {
		g.Expect(adminClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, at)).To(Succeed())
		return at.Status.Conditions
	}).WithTimeout(3*time.Second).ShouldNot(ContainElement(HaveField("Type", cnatv1beta1.ConditionReconciling)), "a Succeeded At is not Reconciling")
}
