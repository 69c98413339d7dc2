package webhook

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/apply"
)

// TestAttackStrippedManagedFieldsRefused: a co-tenant who may patch Ats but
// not their status sends {"metadata":{"managedFields":[{}]}}, which would
// take from the controller the record by which its status applies remove
// what they no longer set (every later status write refused, the At frozen
// in Running after its command ended). The write is refused naming
// metadata.managedFields; a label patch of the same user is not, and the
// controller's record stays. Admitted before validateStatusOwner.
func TestAttackStrippedManagedFieldsRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newNamespace(t)
	const user = "mallory-ats"
	grantInNamespace(t, ns, user, rbacv1.PolicyRule{
		APIGroups: []string{cnatv1beta1.GroupVersion.Group}, Resources: []string{"ats"}, Verbs: []string{"get", "list", "patch", "update"},
	})
	mallory := impersonatingClient(t, user)
	at := &cnatv1beta1.At{
		ObjectMeta: metav1.ObjectMeta{Name: "owned", Namespace: ns},
		Spec:       cnatv1beta1.AtSpec{Schedule: time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339), Command: "echo"},
	}
	g.Expect(adminClient.Create(ctx, at)).To(Succeed())
	g.Eventually(func() []metav1.ManagedFieldsEntry {
		g.Expect(adminClient.Get(ctx, client.ObjectKeyFromObject(at), at)).To(Succeed())
		return statusOwner(at)
	}).WithTimeout(15*time.Second).ShouldNot(BeEmpty(), "the suite's controller writes the status")

	strip := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"managedFields":[{}]}}`))
	err := mallory.Patch(ctx, at.DeepCopy(), strip)
	g.Expect(err).To(Satisfy(apierrors.IsInvalid))
	g.Expect(err).To(MatchError(ContainSubstring("metadata.managedFields")))
	g.Expect(err).To(MatchError(ContainSubstring(apply.StatusFieldManager)))

	label := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"team":"a"}}}`))
	g.Expect(mallory.Patch(ctx, at.DeepCopy(), label)).To(Succeed(), "an ordinary change of the At")
	g.Expect(adminClient.Get(ctx, client.ObjectKeyFromObject(at), at)).To(Succeed())
	g.Expect(statusOwner(at)).NotTo(BeEmpty(), "the controller still owns its status fields")
}
