package webhook

import (
	"context"
	"testing"
	"time"

	utilcache "k8s.io/apimachinery/pkg/util/cache"

	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// The guard asks the API server once per user and namespace within
// AllowedFor, and again after it; a refusal is never reused, so a right
// granted takes effect at once.
func TestGuardReusesAnAllowedForAWhileOnly(t *testing.T) {
	g := NewWithT(t)
	may := map[string]bool{"alice": true}
	asked := 0
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(runtime.NewScheme()).Build(), interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			review := obj.(*authorizationv1.SubjectAccessReview)
			asked++
			review.Status.Allowed = may[review.Spec.User] && review.Spec.ResourceAttributes.Namespace == "team"
			return nil
		},
	})
	now := clocktesting.NewFakeClock(time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC))
	v := &AtValidator{Client: c, PodCreateGuard: true, PodCreateDecisions: utilcache.NewLRUExpireCacheWithClock(RecentAnswers, now)}
	guard := func(user authenticationv1.UserInfo, namespace string) error {
		ctx := admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Namespace: namespace, UserInfo: user,
		}})
		return v.guardPodCreate(ctx, &cnatv1beta1.At{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: namespace}})
	}
	alice := authenticationv1.UserInfo{Username: "alice", Groups: []string{"dev"}}

	g.Expect(guard(alice, "team")).To(Succeed())
	g.Expect(guard(alice, "team")).To(Succeed())
	g.Expect(asked).To(Equal(1), "the same user in the same namespace: asked once")

	g.Expect(apierrors.IsForbidden(guard(alice, "other"))).To(BeTrue())
	g.Expect(asked).To(Equal(2), "another namespace is another question")
	otherGroups := alice
	otherGroups.Groups = []string{"dev", "ops"}
	g.Expect(guard(otherGroups, "team")).To(Succeed())
	g.Expect(asked).To(Equal(3), "other groups are another question")
	withExtra := alice
	withExtra.Extra = map[string]authenticationv1.ExtraValue{"scopes": {"read"}}
	g.Expect(guard(withExtra, "team")).To(Succeed())
	g.Expect(asked).To(Equal(4), "other extra attributes are another question")

	bob := authenticationv1.UserInfo{Username: "bob"}
	g.Expect(apierrors.IsForbidden(guard(bob, "team"))).To(BeTrue())
	may["bob"] = true
	g.Expect(guard(bob, "team")).To(Succeed(), "a refusal is not reused: the right granted counts at once")
	g.Expect(asked).To(Equal(6))

	// Alice loses the right: within AllowedFor her Ats are still admitted,
	// after it they are refused.
	may["alice"] = false
	now.Step(AllowedFor - time.Second)
	g.Expect(guard(alice, "team")).To(Succeed())
	g.Expect(asked).To(Equal(6))
	now.Step(2 * time.Second)
	g.Expect(apierrors.IsForbidden(guard(alice, "team"))).To(BeTrue(), "the right revoked is enforced after AllowedFor")
	g.Expect(asked).To(Equal(7))
}
