package webhook

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/atpod"
)

// TestRevokedRightStopsTheRun: alice, who may create Ats and Pods, creates
// an At due shortly, and loses the right to create Pods before its time.
// cnat creates no Pod on her behalf and the At says why, naming her and the
// namespace; once the right is granted again, before the deadline, it runs.
func TestRevokedRightStopsTheRun(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newNamespace(t)
	binding := grantPods(t, ns, "alice")
	due := time.Now().Add(3 * time.Second).UTC().Truncate(time.Second)
	at := &cnatv1beta1.At{
		ObjectMeta: metav1.ObjectMeta{Name: "revoked", Namespace: ns},
		Spec:       cnatv1beta1.AtSpec{Schedule: due.Format(time.RFC3339), Command: "echo hello", StartingDeadlineSeconds: ptr.To[int64](300)},
	}
	g.Expect(clientAs(t, "alice").Create(ctx, at)).To(Succeed())
	g.Expect(adminClient.Delete(ctx, binding.DeepCopy())).To(Succeed())

	pods := func(g Gomega) []corev1.Pod {
		var list corev1.PodList
		g.Expect(adminClient.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{cnatv1beta1.LabelAt: at.Name})).To(Succeed())
		return list.Items
	}
	g.Eventually(func(g Gomega) {
		got := &cnatv1beta1.At{}
		g.Expect(adminClient.Get(ctx, client.ObjectKeyFromObject(at), got)).To(Succeed())
		g.Expect(got.Status.Phase).To(Equal(cnatv1beta1.PhasePending))
		g.Expect(got.Status.Reason).To(Equal(cnatv1beta1.ReasonAuthorForbidden))
		g.Expect(got.Status.Message).To(And(ContainSubstring(`"alice"`), ContainSubstring(`"`+ns+`"`)))
	}).WithTimeout(20 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	g.Consistently(pods).WithTimeout(2*time.Second).Should(BeEmpty(), "no Pod for a user who may not create one")

	g.Expect(adminClient.Create(ctx, binding.DeepCopy())).To(Succeed())
	podName := atpod.PodName(at, 1)
	g.Eventually(pods).WithTimeout(40*time.Second).WithPolling(200*time.Millisecond).Should(ContainElement(
		HaveField("ObjectMeta.Name", podName)), "the right restored, the At runs")
	playKubelet(ctx, g, ns, podName, 0)
	g.Eventually(func(g Gomega) cnatv1beta1.Phase {
		got := &cnatv1beta1.At{}
		g.Expect(adminClient.Get(ctx, client.ObjectKeyFromObject(at), got)).To(Succeed())
		return got.Status.Phase
	}).WithTimeout(20 * time.Second).Should(Equal(cnatv1beta1.PhaseSucceeded))
}
