package webhook

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/test/testenv"
)

// TestAttackForgedOutcomeThroughPodStatus: a co-tenant with `patch
// pods/status` in the namespace (docs/security.md, threat row "a user who
// may patch or update Pods, or patch pods/status") writes the status of an
// At's own Pod: the Pod was never scheduled, its command never ran, and
// the co-tenant reports it terminated with exit code 0, phase Succeeded.
// cnat-pod-claims only looks at the Pod's metadata and spec, so the write
// is accepted, and the controller reads the forged status as the run's
// outcome: the At ends Succeeded (Completed) for a command that never ran.
//
// Breaks: docs/security.md "forge an At's run … so the At adopts or reports
// a run that never happened" (claimed mitigated by cnat-pod-claims), the
// README's "Only cnat makes cnat's Pods" (no one else changes cnat's
// records "through any path", pods/status named), and the README table
// "exited 0 … Succeeded (Completed)". What the At reports is whatever any
// holder of pods/status writes, not what its kubelet saw.
func TestAttackForgedOutcomeThroughPodStatus(t *testing.T) {
	installPodClaims(t)
	ctx := t.Context()
	ns := newNamespace(t)
	const user = "mallory-status"
	grantInNamespace(t, ns, user,
		podRule("pods", "create", "get", "list", "patch", "update", "delete"),
		podRule("pods/status", "get", "patch", "update"),
	)
	mallory := impersonatingClient(t, user)
	NewWithT(t).Eventually(func() error {
		pod := plainTestPod(ns, "probe")
		pod.Labels = map[string]string{cnatv1beta1.LabelAt: "probe"}
		return mallory.Create(ctx, pod, client.DryRunAll)
	}).WithTimeout(30*time.Second).Should(Satisfy(apierrors.IsForbidden), "the policy cnat-pod-claims is in force")

	t.Run("a never-run Pod reported Succeeded", func(t *testing.T) {
		g := NewWithT(t)
		pod := runningAtPod(t, ns, "never-ran")
		g.Expect(pod.Spec.NodeName).To(BeEmpty(), "unscheduled: its command cannot have run")

		forged := pod.DeepCopy()
		forged.Status = testenv.TerminatedStatus(forged, 0, time.Now())
		err := mallory.Status().Update(ctx, forged)

		at := &cnatv1beta1.At{}
		if err == nil {
			// What the At's owner sees once the controller reads the forgery.
			g.Eventually(func() cnatv1beta1.Phase {
				g.Expect(adminClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "never-ran"}, at)).To(Succeed())
				return at.Status.Phase
			}).WithTimeout(15 * time.Second).Should(Equal(cnatv1beta1.PhaseSucceeded))
			t.Logf("the At after the co-tenant's status write: phase %s, reason %s, message %q", at.Status.Phase, at.Status.Reason, at.Status.Message)
		}
		g.Expect(err).To(Satisfy(apierrors.IsForbidden),
			"a co-tenant's pods/status write that reports the At's unscheduled Pod Succeeded must be refused")
		g.Expect(at.Status.Phase).NotTo(Equal(cnatv1beta1.PhaseSucceeded), "the command never ran")
	})

	t.Run("a running Pod reported disrupted and failed, so the command runs again beside it", func(t *testing.T) {
		g := NewWithT(t)
		pod := runningAtPod(t, ns, "runs-twice")
		// Its kubelet: the Pod is bound and its command runs.
		bindAndRun(g, ctx, pod)

		// The co-tenant: an eviction that never happened, the Pod Failed.
		forged := pod.DeepCopy()
		g.Expect(mallory.Get(ctx, client.ObjectKeyFromObject(forged), forged)).To(Succeed())
		// Its status rewritten whole: no startTime, no container started,
		// which reads as "disrupted before its command started", retried at
		// once and without counting against backoffLimit (0 here).
		forged.Status = corev1.PodStatus{
			Phase: corev1.PodFailed, Reason: "Evicted", Message: "forged",
			Conditions: []corev1.PodCondition{{
				Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI",
				Message: "Eviction API: evicting", LastTransitionTime: metav1.Now(),
			}},
		}
		err := mallory.Status().Update(ctx, forged)

		var pods corev1.PodList
		if err == nil {
			g.Eventually(func() int {
				g.Expect(adminClient.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{cnatv1beta1.LabelAt: "runs-twice"})).To(Succeed())
				return len(pods.Items)
			}).WithTimeout(15*time.Second).Should(BeNumerically(">=", 2), "the controller starts attempt 2")
			for _, p := range pods.Items {
				t.Logf("Pod %s: phase %s, node %q", p.Name, p.Status.Phase, p.Spec.NodeName)
			}
		}
		g.Expect(err).To(Satisfy(apierrors.IsForbidden),
			"a co-tenant's pods/status write that reports the At's running Pod disrupted must be refused")
		g.Consistently(func() int {
			g.Expect(adminClient.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{cnatv1beta1.LabelAt: "runs-twice"})).To(Succeed())
			return len(pods.Items)
		}).WithTimeout(3*time.Second).Should(Equal(1), "no second run while the first one's command runs on its node")
	})
}
