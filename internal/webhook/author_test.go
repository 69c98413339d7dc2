package webhook

import (
	"context"
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/author"
)

// grantPods gives user a Role in namespace that lets them read, create and
// change Ats and create Pods, bound by a RoleBinding of the user's name.
func grantPods(t *testing.T, namespace, user string) *rbacv1.RoleBinding {
	t.Helper()
	g := NewWithT(t)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: namespace}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{cnatv1beta1.GroupVersion.Group}, Resources: []string{"ats"}, Verbs: []string{"create", "get", "list", "watch", "update", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}},
	}}
	g.Expect(adminClient.Create(t.Context(), role)).To(Succeed())
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
	g.Expect(adminClient.Create(t.Context(), binding.DeepCopy())).To(Succeed())
	return binding
}

// clientAs is a client authenticated as user (a client certificate), in
// group system:authenticated.
func clientAs(t *testing.T, user string) client.Client {
	t.Helper()
	g := NewWithT(t)
	u, err := testEnv.AddUser(envtest.User{Name: user, Groups: []string{"system:authenticated"}}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := client.New(u.Config(), client.Options{Scheme: testScheme})
	g.Expect(err).NotTo(HaveOccurred())
	return c
}

// authorOf is the user name the stored At's author annotation names, ""
// without one.
func authorOf(g Gomega, namespace, name string) string {
	at := &cnatv1beta1.At{}
	g.Expect(adminClient.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, at)).To(Succeed())
	user, ok, err := author.Of(at)
	g.Expect(err).NotTo(HaveOccurred())
	if !ok {
		return ""
	}
	return user.Username
}

const forgedAuthor = `{"username":"system:serviceaccount:kube-system:root","groups":["system:masters"]}`

// TestAuthorIsWhoLastSetTheSpec: in either version, the At records the
// requester as its author on create and on an update of its spec; an
// update that leaves the spec alone keeps the author, and a value a request
// writes is overwritten, whether it is set, changed or removed.
func TestAuthorIsWhoLastSetTheSpec(t *testing.T) {
	ns := newNamespace(t)
	grantPods(t, ns, "alice")
	grantPods(t, ns, "bob")
	alice, bob := clientAs(t, "alice"), clientAs(t, "bob")

	for _, version := range []string{"v1beta1", "v1alpha1"} {
		t.Run(version, func(t *testing.T) {
			g := NewWithT(t)
			ctx := t.Context()
			name := "author-" + version
			obj := newAtObject(ns, name, version == "v1alpha1")
			obj.SetAnnotations(map[string]string{cnatv1beta1.AnnotationAuthor: forgedAuthor})
			g.Expect(alice.Create(ctx, obj)).To(Succeed())
			g.Expect(authorOf(g, ns, name)).To(Equal("alice"), "created by alice, with a forged author")
			g.Expect(obj.GetAnnotations()).To(HaveKey(cnatv1beta1.AnnotationAuthor), "the %s form carries it", version)
			g.Expect(obj.GetAnnotations()[cnatv1beta1.AnnotationAuthor]).NotTo(Equal(forgedAuthor))

			patch := func(c client.Client, body string) {
				t.Helper()
				u := &unstructured.Unstructured{}
				u.SetGroupVersionKind(obj.GroupVersionKind())
				u.SetNamespace(ns)
				u.SetName(name)
				g.Expect(c.Patch(ctx, u, client.RawPatch(types.MergePatchType, []byte(body)))).To(Succeed(), body)
			}
			patch(bob, `{"metadata":{"labels":{"team":"b"}}}`)
			g.Expect(authorOf(g, ns, name)).To(Equal("alice"), "bob changed a label, not the spec")
			patch(bob, `{"metadata":{"annotations":{"`+cnatv1beta1.AnnotationAuthor+`":`+quoteJSON(author.Annotation(authenticationv1.UserInfo{Username: "bob"}))+`}}}`)
			g.Expect(authorOf(g, ns, name)).To(Equal("alice"), "bob wrote himself as the author")
			patch(bob, `{"metadata":{"annotations":{"`+cnatv1beta1.AnnotationAuthor+`":null}}}`)
			g.Expect(authorOf(g, ns, name)).To(Equal("alice"), "bob removed the author")

			patch(bob, `{"spec":{"command":"echo bob"}}`)
			g.Expect(authorOf(g, ns, name)).To(Equal("bob"), "bob changed the spec")
			patch(alice, `{"metadata":{"annotations":{"`+cnatv1beta1.AnnotationAuthor+`":`+quoteJSON(forgedAuthor)+`}},"spec":{"command":"echo alice"}}`)
			g.Expect(authorOf(g, ns, name)).To(Equal("alice"), "alice changed the spec, with a forged author")
		})
	}
}

// quoteJSON is s as a JSON string.
func quoteJSON(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

// TestAuthorIsNotWrittenThroughStatus: a write of the status subresource,
// in either version, cannot change the author: the API server keeps the
// stored metadata on status writes of a custom resource.
func TestAuthorIsNotWrittenThroughStatus(t *testing.T) {
	ns := newNamespace(t)
	for _, v1alpha1 := range []bool{false, true} {
		g := NewWithT(t)
		ctx := t.Context()
		obj := newAtObject(ns, map[bool]string{false: "status-v1beta1", true: "status-v1alpha1"}[v1alpha1], v1alpha1)
		g.Expect(adminClient.Create(ctx, obj)).To(Succeed())
		stored := obj.GetAnnotations()[cnatv1beta1.AnnotationAuthor]
		g.Expect(stored).NotTo(BeEmpty())

		g.Expect(adminClient.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"`+cnatv1beta1.AnnotationAuthor+`":`+quoteJSON(forgedAuthor)+`}},"status":{"message":"a status patch"}}`)))).To(Succeed())
		g.Expect(obj.GetAnnotations()).To(HaveKeyWithValue(cnatv1beta1.AnnotationAuthor, stored), "%s: the status patch kept the author", obj.GetAPIVersion())

		g.Expect(adminClient.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"`+cnatv1beta1.AnnotationAuthor+`":null}},"status":{"message":"another status patch"}}`)))).To(Succeed())
		g.Expect(obj.GetAnnotations()).To(HaveKeyWithValue(cnatv1beta1.AnnotationAuthor, stored), "%s: the status patch kept the author", obj.GetAPIVersion())

		g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := adminClient.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				return err
			}
			obj.SetAnnotations(map[string]string{cnatv1beta1.AnnotationAuthor: forgedAuthor})
			return adminClient.Status().Update(ctx, obj)
		})).To(Succeed())
		g.Expect(obj.GetAnnotations()).To(HaveKeyWithValue(cnatv1beta1.AnnotationAuthor, stored), "%s: the status update kept the author", obj.GetAPIVersion())
	}
}

// TestValidatorRefusesAnAuthorItDidNotWrite: where the defaulting webhook
// was left out (or another webhook changed its work), the validating
// webhook refuses an author that is not what the defaulting webhook writes,
// naming the annotation: set, changed or removed. No author where there
// was none is admitted (an upgrade from a release that wrote none).
func TestValidatorRefusesAnAuthorItDidNotWrite(t *testing.T) {
	alice := authenticationv1.UserInfo{Username: "alice", Groups: []string{"dev"}}
	// Past the author check, the At is valid and its dry-run Pod accepted.
	c := fake.NewClientBuilder().WithScheme(testScheme).Build()
	v := &AtValidator{Client: c, Reader: c}
	request := func(op admissionv1.Operation) context.Context {
		return admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: op, UserInfo: alice}})
	}
	at := func(command string, annotations map[string]string) *cnatv1beta1.At {
		return &cnatv1beta1.At{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "team", Annotations: annotations},
			Spec: cnatv1beta1.AtSpec{Schedule: "2099-01-01T00:00:00Z", Command: command}}
	}
	by := func(user authenticationv1.UserInfo) map[string]string {
		return map[string]string{cnatv1beta1.AnnotationAuthor: author.Annotation(user)}
	}
	refused := func(g *WithT, err error) {
		g.Expect(err).To(Satisfy(apierrors.IsInvalid))
		g.Expect(err).To(MatchError(ContainSubstring("metadata.annotations[" + cnatv1beta1.AnnotationAuthor + "]")))
	}

	t.Run("create, none", func(t *testing.T) {
		_, err := v.ValidateCreate(request(admissionv1.Create), at("echo", nil))
		NewWithT(t).Expect(err).NotTo(HaveOccurred(), "no author, as an At stored before authors were recorded: admitted (an upgrade)")
	})
	for name, annotations := range map[string]map[string]string{
		"another user":     by(authenticationv1.UserInfo{Username: "bob"}),
		"alice, no groups": by(authenticationv1.UserInfo{Username: "alice"}),
		"not JSON":         {cnatv1beta1.AnnotationAuthor: "alice"},
	} {
		t.Run("create, "+name, func(t *testing.T) {
			_, err := v.ValidateCreate(request(admissionv1.Create), at("echo", annotations))
			refused(NewWithT(t), err)
		})
	}
	t.Run("update of the spec, the old author kept", func(t *testing.T) {
		bob := by(authenticationv1.UserInfo{Username: "bob"})
		_, err := v.ValidateUpdate(request(admissionv1.Update), at("echo", bob), at("echo changed", bob))
		refused(NewWithT(t), err)
	})
	t.Run("update of the metadata, the author changed", func(t *testing.T) {
		bob := by(authenticationv1.UserInfo{Username: "bob"})
		_, err := v.ValidateUpdate(request(admissionv1.Update), at("echo", bob), at("echo", by(alice)))
		refused(NewWithT(t), err)
	})
	t.Run("update of the metadata, the author removed", func(t *testing.T) {
		_, err := v.ValidateUpdate(request(admissionv1.Update), at("echo", by(alice)), at("echo", nil))
		refused(NewWithT(t), err)
	})
	t.Run("update of the metadata, an author added to an At without one", func(t *testing.T) {
		_, err := v.ValidateUpdate(request(admissionv1.Update), at("echo", nil), at("echo", by(alice)))
		refused(NewWithT(t), err)
	})
	t.Run("update of the spec, the author removed", func(t *testing.T) {
		_, err := v.ValidateUpdate(request(admissionv1.Update), at("echo", by(alice)), at("echo changed", nil))
		refused(NewWithT(t), err)
	})
	t.Run("update of the spec of an At without an author, none written", func(t *testing.T) {
		_, err := v.ValidateUpdate(request(admissionv1.Update), at("echo", nil), at("echo changed", nil))
		NewWithT(t).Expect(err).NotTo(HaveOccurred(), "as a create without an author")
	})
	t.Run("update of the metadata, no author kept", func(t *testing.T) {
		_, err := v.ValidateUpdate(request(admissionv1.Update), at("echo", nil), at("echo", map[string]string{"a": "b"}))
		NewWithT(t).Expect(err).NotTo(HaveOccurred(), "an At stored before authors were recorded keeps none")
	})
}
