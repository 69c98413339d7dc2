package atpod_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/atpod"
)

// TestRunOf: the Pod cnat renders for an attempt is that attempt's run; a
// Pod that differs from it in any one of the claims is not, and says why.
func TestRunOf(t *testing.T) {
	at := newAt("echo", nil)
	for name, tc := range map[string]struct {
		edit    func(*corev1.Pod)
		wantWhy string
	}{
		"as rendered":             {edit: func(*corev1.Pod) {}},
		"no controller":           {edit: func(p *corev1.Pod) { p.OwnerReferences = nil }, wantWhy: "no controller"},
		"another kind":            {edit: func(p *corev1.Pod) { p.OwnerReferences[0].Kind = "Decoy" }, wantWhy: "Decoy"},
		"another group":           {edit: func(p *corev1.Pod) { p.OwnerReferences[0].APIVersion = "cnat.example.com/v1beta1" }, wantWhy: "cnat.example.com"},
		"an API version unparsed": {edit: func(p *corev1.Pod) { p.OwnerReferences[0].APIVersion = "a/b/c" }, wantWhy: "a/b/c"},
		"another UID":             {edit: func(p *corev1.Pod) { p.OwnerReferences[0].UID = "other" }, wantWhy: "uid other"},
		"another At's name label": {edit: func(p *corev1.Pod) { p.Labels[cnatv1beta1.LabelAt] = "other" }, wantWhy: "do not name this At"},
		"another UID label":       {edit: func(p *corev1.Pod) { p.Labels[cnatv1beta1.LabelAtUID] = "other" }, wantWhy: "do not name this At"},
		"no attempt label":        {edit: func(p *corev1.Pod) { delete(p.Labels, cnatv1beta1.LabelAttempt) }, wantWhy: "not an attempt number"},
		"attempt 0":               {edit: func(p *corev1.Pod) { p.Labels[cnatv1beta1.LabelAttempt] = "0" }, wantWhy: "not an attempt number"},
		"another attempt's name":  {edit: func(p *corev1.Pod) { p.Labels[cnatv1beta1.LabelAttempt] = "2" }, wantWhy: "the name of attempt 2"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			pod := atpod.NewPod(at, 1, time.Now(), atpod.PodOptions{DefaultImage: "busybox"})
			tc.edit(pod)
			attempt, err := atpod.RunOf(pod, at)
			if tc.wantWhy == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(attempt).To(Equal(int32(1)))
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.wantWhy)))
			g.Expect(attempt).To(BeZero())
		})
	}
}
