package controller

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/author"
)

// createAtBy creates an At whose author annotation says user, as the
// defaulting webhook writes it (this suite runs no webhooks); an empty
// value stores none.
func (h *harness) createAtBy(name, value string, spec cnatv1beta1.AtSpec) {
	h.t.Helper()
	at := &cnatv1beta1.At{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns}, Spec: spec}
	if value != "" {
		at.Annotations = map[string]string{cnatv1beta1.AnnotationAuthor: value}
	}
	h.g.Expect(apiClient.Create(h.ctx, at)).To(Succeed())
}

// reconcileErr runs one reconcile of the At and returns its error.
func (h *harness) reconcileErr(name string) error {
	_, err := h.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: h.ns, Name: name}})
	return err
}

// grantPodsToGroup lets the members of group create Pods in the harness's
// namespace.
func (h *harness) grantPodsToGroup(group string) {
	h.t.Helper()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "create-pods", Namespace: h.ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}},
	}}
	h.g.Expect(apiClient.Create(h.ctx, role)).To(Succeed())
	h.g.Expect(apiClient.Create(h.ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "create-pods", Namespace: h.ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: group}},
	})).To(Succeed())
}

// TestAuthorMayNoLongerCreatePods: an At whose author may not create Pods
// in its namespace when it is due gets no Pod; it says AuthorForbidden,
// naming the user and the namespace, with one Warning, is retried (never
// terminal), runs once the right is granted (here to a group of the
// author's: the review asks with the author's groups), and is Missed if its
// deadline passes first. An At with no author, or the check turned off,
// runs as before.
func TestAuthorMayNoLongerCreatePods(t *testing.T) {
	h := newHarness(t)
	h.r.PodCreateGuard = true
	alice := author.Annotation(authenticationv1.UserInfo{Username: "alice", UID: "a-1", Groups: []string{"team-a", "system:authenticated"}})
	h.createAtBy("restored", alice, cnatv1beta1.AtSpec{Schedule: schedule(start), Command: "echo", StartingDeadlineSeconds: ptr.To[int64](300)})
	h.createAtBy("missed", alice, cnatv1beta1.AtSpec{Schedule: schedule(start), Command: "echo", StartingDeadlineSeconds: ptr.To[int64](60)})

	for _, name := range []string{"restored", "missed"} {
		for range 2 {
			h.g.Expect(h.reconcileErr(name)).To(MatchError(ContainSubstring(`user "alice"`)), "returned, to be retried with backoff")
		}
		at := h.at(name)
		h.g.Expect(at.Status.Phase).To(Equal(cnatv1beta1.PhasePending))
		h.g.Expect(at.Status.Reason).To(Equal(cnatv1beta1.ReasonAuthorForbidden))
		h.g.Expect(at.Status.Message).To(And(ContainSubstring(`User "alice"`), ContainSubstring(`namespace "`+h.ns+`"`)))
		h.g.Expect(condition(at, cnatv1beta1.ConditionReady).Status).To(Equal(metav1.ConditionFalse))
		h.g.Expect(condition(at, cnatv1beta1.ConditionReconciling).Status).To(Equal(metav1.ConditionTrue))
		h.g.Expect(condition(at, cnatv1beta1.ConditionStalled)).To(BeNil(), "not stalled: it is asked again")
		h.g.Expect(h.pods(name)).To(BeEmpty(), "no Pod on behalf of a user who may not create one")
	}
	var warnings []string
	h.g.Expect(h.events()).To(ContainElement(HavePrefix("Warning "+cnatv1beta1.ReasonAuthorForbidden), &warnings))
	h.g.Expect(warnings).To(HaveLen(2), "one Warning per At, though each was refused twice")

	h.clock.Step(2 * time.Minute)
	h.reconcile("missed")
	h.g.Expect(h.at("missed").Status.Phase).To(Equal(cnatv1beta1.PhaseMissed), "its deadline passed while its author could not create Pods")

	h.grantPodsToGroup("team-a")
	h.g.Eventually(func(g Gomega) {
		g.Expect(h.reconcileErr("restored")).To(Succeed())
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed(), "runs once the right is granted (the API server learns of it through informers)")
	h.g.Expect(h.pods("restored")).To(HaveLen(1))

	h.createAtBy("no-author", "", cnatv1beta1.AtSpec{Schedule: schedule(h.clock.Now()), Command: "echo"})
	h.reconcile("no-author")
	h.g.Expect(h.pods("no-author")).To(HaveLen(1), "an At stored before authors were recorded runs as before")

	bob := author.Annotation(authenticationv1.UserInfo{Username: "bob"})
	h.createAtBy("guard-off", bob, cnatv1beta1.AtSpec{Schedule: schedule(h.clock.Now()), Command: "echo"})
	h.r.PodCreateGuard = false
	h.reconcile("guard-off")
	h.g.Expect(h.pods("guard-off")).To(HaveLen(1), "--pod-create-guard=false: no one is asked")
}

// TestAuthorCheckThatCannotBeMade: an error asking the API server is
// retried as PodCreateFailed, saying what was asked; an author annotation
// that does not parse (stored while the webhooks were off) creates no Pod.
func TestAuthorCheckThatCannotBeMade(t *testing.T) {
	h := newHarness(t)
	h.r = h.newReconciler(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if _, ok := obj.(*authorizationv1.SubjectAccessReview); ok {
			return errors.New("connection refused")
		}
		return c.Create(ctx, obj, opts...)
	}})
	h.r.PodCreateGuard = true
	h.createAtBy("unasked", author.Annotation(authenticationv1.UserInfo{Username: "alice"}), cnatv1beta1.AtSpec{Schedule: schedule(start), Command: "echo"})
	h.createAtBy("unreadable", "alice", cnatv1beta1.AtSpec{Schedule: schedule(start), Command: "echo"})

	h.g.Expect(h.reconcileErr("unasked")).To(HaveOccurred())
	at := h.at("unasked")
	h.g.Expect(at.Status.Reason).To(Equal(cnatv1beta1.ReasonPodCreateFailed))
	h.g.Expect(at.Status.Message).To(And(ContainSubstring(`whether user "alice"`), ContainSubstring("connection refused")))
	h.g.Expect(h.pods("unasked")).To(BeEmpty())

	h.g.Expect(h.reconcileErr("unreadable")).To(HaveOccurred())
	at = h.at("unreadable")
	h.g.Expect(at.Status.Reason).To(Equal(cnatv1beta1.ReasonAuthorForbidden))
	h.g.Expect(at.Status.Message).To(ContainSubstring("metadata.annotations[" + cnatv1beta1.AnnotationAuthor + "]"))
	h.g.Expect(h.pods("unreadable")).To(BeEmpty())
}

// TestAuthorChecksAskedTogetherShareOneReview: the checks of Ats by one
// author due together share the review in flight, so a burst costs one
// SubjectAccessReview per round trip, not one per At; a check asked after
// that review returned asks again (a right revoked since is seen), and
// another author's check is its own review.
func TestAuthorChecksAskedTogetherShareOneReview(t *testing.T) {
	g := NewWithT(t)
	var asked atomic.Int32
	var allowed atomic.Bool
	allowed.Store(true)
	gate := make(chan struct{})
	c := interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{Create: func(ctx context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
		review := obj.(*authorizationv1.SubjectAccessReview)
		asked.Add(1)
		<-gate
		review.Status.Allowed = allowed.Load() && review.Spec.User == "alice"
		return nil
	}})
	var reviews accessReviews
	ask := func(user string) (bool, error) {
		return reviews.allowed(context.Background(), c, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{"team-a"}, ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "ns", Verb: "create", Resource: "pods"},
		}})
	}

	const ats = 20
	var wg sync.WaitGroup
	answers := make(chan bool, ats)
	for range ats {
		wg.Go(func() {
			ok, err := ask("alice")
			g.Expect(err).NotTo(HaveOccurred())
			answers <- ok
		})
	}
	g.Eventually(asked.Load).Should(BeEquivalentTo(1))
	time.Sleep(200 * time.Millisecond) // the other checks join the review in flight
	close(gate)
	wg.Wait()
	close(answers)
	for ok := range answers {
		g.Expect(ok).To(BeTrue())
	}
	g.Expect(asked.Load()).To(BeNumerically("<=", 2), "%d checks of one author asked together", ats)

	before := asked.Load()
	allowed.Store(false)
	g.Expect(ask("alice")).To(BeFalse(), "a check after the review returned asks again: the right revoked since is seen")
	g.Expect(ask("bob")).To(BeFalse(), "another author's check is its own review")
	g.Expect(asked.Load()).To(Equal(before + 2))
}
