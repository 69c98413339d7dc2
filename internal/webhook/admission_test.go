package webhook

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp/cmpopts"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	cnatv1alpha1 "github.com/programming-kubernetes/cnat/api/v1alpha1"
	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/test/testenv"
)

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}
	NewWithT(t).Expect(adminClient.Create(t.Context(), ns)).To(Succeed())
	return ns.Name
}

// bookSample is the At of Programming Kubernetes, as the book writes it.
func bookSample(namespace string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cnat.programming-kubernetes.info/v1alpha1",
		"kind":       "At",
		"metadata":   map[string]any{"name": "example-at", "namespace": namespace},
		"spec":       map[string]any{"schedule": "2019-04-12T10:12:00Z", "command": "echo YAY"},
	}}
}

// playKubelet finishes a Pod the way the kubelet would report it.
func playKubelet(ctx context.Context, g *WithT, namespace, name string, code int32) {
	pod := &corev1.Pod{}
	g.Eventually(func() error {
		return adminClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pod)
	}).Should(Succeed())
	pod.Status = testenv.TerminatedStatus(pod, code, time.Now())
	g.Expect(adminClient.Status().Update(ctx, pod)).To(Succeed())
}

func TestBookSampleIsAcceptedAndRuns(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newNamespace(t)
	g.Expect(adminClient.Create(ctx, bookSample(ns))).To(Succeed())

	// Stored as v1beta1: the same schedule and command, nothing more.
	stored := &cnatv1beta1.At{}
	g.Expect(adminClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "example-at"}, stored)).To(Succeed())
	g.Expect(stored.Spec.Schedule).To(Equal("2019-04-12T10:12:00Z"))
	g.Expect(stored.Spec.Command).To(Equal("echo YAY"))
	g.Expect(stored.Spec.TimeZone).To(BeNil())
	g.Expect(stored.Spec.Template).To(BeNil())

	// A past schedule with no deadline runs at once, as in the book.
	g.Eventually(func(g Gomega) string {
		g.Expect(adminClient.Get(ctx, client.ObjectKeyFromObject(stored), stored)).To(Succeed())
		return stored.Status.PodName
	}, 10*time.Second).ShouldNot(BeEmpty(), "the controller started the run")
	playKubelet(ctx, g, ns, stored.Status.PodName, 0)

	book := &cnatv1alpha1.At{}
	g.Eventually(func(g Gomega) string {
		g.Expect(adminClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "example-at"}, book)).To(Succeed())
		return book.Status.Phase
	}, 10*time.Second).Should(Equal(cnatv1alpha1.PhaseDone))
	g.Expect(adminClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "example-at"}, stored)).To(Succeed())
	g.Expect(stored.Status.Phase).To(Equal(cnatv1beta1.PhaseSucceeded))
	g.Expect(stored.Status.ExitCode).To(Equal(ptr.To[int32](0)))
}

func TestReadingInBothVersions(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newNamespace(t)
	at := &cnatv1beta1.At{
		ObjectMeta: metav1.ObjectMeta{Name: "rich", Namespace: ns},
		Spec: cnatv1beta1.AtSpec{
			Schedule: "2099-11-21T09:00", TimeZone: ptr.To("Europe/Berlin"), Command: "date",
			StartingDeadlineSeconds: ptr.To[int64](60), BackoffLimit: ptr.To[int32](2), TTLSecondsAfterFinished: ptr.To[int32](3600),
			Template: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "main", Image: "alpine:3.20", Env: []corev1.EnvVar{{Name: "GREETING", Value: "hello"}},
			}}}},
		},
	}
	g.Expect(adminClient.Create(ctx, at)).To(Succeed())
	want := &cnatv1beta1.At{}
	g.Expect(adminClient.Get(ctx, client.ObjectKeyFromObject(at), want)).To(Succeed())

	asBook := &cnatv1alpha1.At{}
	g.Expect(adminClient.Get(ctx, client.ObjectKeyFromObject(at), asBook)).To(Succeed())
	g.Expect(asBook.Spec.Schedule).To(Equal("2099-11-21T09:00"))
	g.Expect(asBook.Spec.Command).To(Equal("date"))
	g.Expect(asBook.Spec.Template).To(BeComparableTo(want.Spec.Template))
	g.Expect(asBook.Annotations).To(onlyTheAuthor, "the template is a field, not an annotation")

	// An edit through the book's version keeps the whole spec.
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := adminClient.Get(ctx, client.ObjectKeyFromObject(at), asBook); err != nil {
			return err
		}
		asBook.Labels = map[string]string{"edited-through": "v1alpha1"}
		return adminClient.Update(ctx, asBook)
	})).To(Succeed())
	got := &cnatv1beta1.At{}
	g.Expect(adminClient.Get(ctx, client.ObjectKeyFromObject(at), got)).To(Succeed())
	g.Expect(got.Labels).To(HaveKeyWithValue("edited-through", "v1alpha1"))
	g.Expect(got.Spec).To(Equal(want.Spec))
	g.Expect(got.Annotations).To(onlyTheAuthor)
}

// onlyTheAuthor matches the annotations of an At created with none: the
// author the defaulting webhook writes.
var onlyTheAuthor = And(HaveLen(1), HaveKey(cnatv1beta1.AnnotationAuthor))

// TestTemplateThroughV1alpha1: a template written through v1alpha1 is
// defaulted, stored and read back in both versions as spec.template, on
// create and on update.
func TestTemplateThroughV1alpha1(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newNamespace(t)
	u := bookSample(ns)
	u.Object["spec"] = map[string]any{
		"schedule": "2099-01-01T00:00:00Z",
		"command":  "pg_dump app",
		"template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"app": "backup"}},
			"spec": map[string]any{
				"serviceAccountName": "backup",
				"containers": []any{map[string]any{
					"name": "main", "image": "postgres:17",
					"env":       []any{map[string]any{"name": "PGHOST", "value": "db"}},
					"resources": map[string]any{"limits": map[string]any{"memory": "1Gi"}},
				}},
			},
		},
	}
	g.Expect(adminClient.Create(ctx, u)).To(Succeed())
	want := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "backup"}},
		Spec: corev1.PodSpec{
			ServiceAccountName: "backup",
			RestartPolicy:      corev1.RestartPolicyNever, // the defaulter's
			Containers: []corev1.Container{{
				Name: "main", Image: "postgres:17",
				Env:       []corev1.EnvVar{{Name: "PGHOST", Value: "db"}},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
			}},
		},
	}
	key := client.ObjectKey{Namespace: ns, Name: "example-at"}
	check := func(want *corev1.PodTemplateSpec) {
		stored := &cnatv1beta1.At{}
		g.Expect(adminClient.Get(ctx, key, stored)).To(Succeed())
		g.Expect(stored.Spec.Template).To(BeComparableTo(want, cmpopts.EquateEmpty()), "as v1beta1")
		g.Expect(stored.Annotations).To(onlyTheAuthor)
		book := &cnatv1alpha1.At{}
		g.Expect(adminClient.Get(ctx, key, book)).To(Succeed())
		g.Expect(book.Spec.Template).To(BeComparableTo(want, cmpopts.EquateEmpty()), "as v1alpha1")
		g.Expect(book.Annotations).To(onlyTheAuthor, "no annotation carries the template")
	}
	check(want)

	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		book := &cnatv1alpha1.At{}
		if err := adminClient.Get(ctx, key, book); err != nil {
			return err
		}
		book.Spec.Template.Spec.Containers[0].Image = "postgres:18"
		return adminClient.Update(ctx, book)
	})).To(Succeed())
	want.Spec.Containers[0].Image = "postgres:18"
	check(want)
}

func TestDefaultsTheTemplate(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	at := &cnatv1beta1.At{
		ObjectMeta: metav1.ObjectMeta{Name: "defaults", Namespace: ns},
		Spec: cnatv1beta1.AtSpec{Schedule: "2099-01-01T00:00:00Z", Command: "true", Template: &corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}},
		}},
	}
	g.Expect(adminClient.Create(t.Context(), at)).To(Succeed())
	g.Expect(at.Spec.Template.Spec.RestartPolicy).To(Equal(corev1.RestartPolicyNever))
	g.Expect(at.Spec.Template.Spec.Containers[0].Image).To(Equal(testDefaultImage))
}

func TestRefusesBadAts(t *testing.T) {
	ns := newNamespace(t)
	valid := func() *cnatv1beta1.At {
		return &cnatv1beta1.At{
			ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: ns},
			Spec:       cnatv1beta1.AtSpec{Schedule: "2099-01-01T00:00:00Z", Command: "echo"},
		}
	}
	withTemplate := func(spec corev1.PodSpec) func(*cnatv1beta1.At) {
		return func(at *cnatv1beta1.At) { at.Spec.Template = &corev1.PodTemplateSpec{Spec: spec} }
	}
	main := func(c corev1.Container) corev1.PodSpec {
		if c.Name == "" {
			c.Name = "main"
		}
		c.Image = "alpine:3.20"
		return corev1.PodSpec{Containers: []corev1.Container{c}}
	}
	for _, tc := range []struct {
		name string
		edit func(*cnatv1beta1.At)
		// wantField is the field the message must name; wantText a part of
		// what it must say is accepted or wrong.
		wantField, wantText string
	}{
		{"words for a time", func(a *cnatv1beta1.At) { a.Spec.Schedule = "tomorrow at nine" }, "spec.schedule", "RFC 3339"},
		{"no offset and no time zone", func(a *cnatv1beta1.At) { a.Spec.Schedule = "2099-01-01T09:00:00" }, "spec.schedule", "spec.timeZone"},
		{"offset and time zone", func(a *cnatv1beta1.At) { a.Spec.TimeZone = ptr.To("Europe/Berlin") }, "spec.schedule", "without offset"},
		{"unknown time zone", func(a *cnatv1beta1.At) {
			a.Spec.Schedule, a.Spec.TimeZone = "2099-01-01T09:00", ptr.To("Mars/Olympus_Mons")
		}, "spec.timeZone", "Mars/Olympus_Mons"},
		{"Local time zone", func(a *cnatv1beta1.At) { a.Spec.Schedule, a.Spec.TimeZone = "2099-01-01T09:00", ptr.To("Local") }, "spec.timeZone", "Local"},
		{"path as a time zone", func(a *cnatv1beta1.At) {
			a.Spec.Schedule, a.Spec.TimeZone = "2099-01-01T09:00", ptr.To("../../etc/passwd")
		}, "spec.timeZone", ""},
		{"30 February", func(a *cnatv1beta1.At) { a.Spec.Schedule = "2099-02-30T09:00:00Z" }, "spec.schedule", "2099-02-30"},
		{"hour 25", func(a *cnatv1beta1.At) { a.Spec.Schedule = "2099-01-01T25:00:00Z" }, "spec.schedule", ""},
		{"lowercase t and z", func(a *cnatv1beta1.At) { a.Spec.Schedule = "2099-01-01t09:00:00z" }, "spec.schedule", "RFC 3339"},
		{"nothing to run", func(a *cnatv1beta1.At) { a.Spec.Command = "" }, "spec", "spec.command or spec.template must be set"},
		{"command too long", func(a *cnatv1beta1.At) { a.Spec.Command = strings.Repeat("x", 32769) }, "spec.command", "32768"},
		{"negative starting deadline", func(a *cnatv1beta1.At) { a.Spec.StartingDeadlineSeconds = ptr.To[int64](-1) }, "spec.startingDeadlineSeconds", "greater than or equal to 0"},
		{"zero active deadline", func(a *cnatv1beta1.At) { a.Spec.ActiveDeadlineSeconds = ptr.To[int64](0) }, "spec.activeDeadlineSeconds", "greater than or equal to 1"},
		{"negative backoff limit", func(a *cnatv1beta1.At) { a.Spec.BackoffLimit = ptr.To[int32](-1) }, "spec.backoffLimit", "greater than or equal to 0"},
		{"huge backoff limit", func(a *cnatv1beta1.At) { a.Spec.BackoffLimit = ptr.To[int32](1000) }, "spec.backoffLimit", "less than or equal to 100"},
		{"negative TTL", func(a *cnatv1beta1.At) { a.Spec.TTLSecondsAfterFinished = ptr.To[int32](-1) }, "spec.ttlSecondsAfterFinished", "greater than or equal to 0"},
		{"name too long for a label", func(a *cnatv1beta1.At) { a.Name = strings.Repeat("a", 64) }, "metadata.name", "63"},
		{"restartPolicy Always", withTemplate(corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways, Containers: []corev1.Container{{Name: "main", Image: "alpine"}}}), "spec.template.spec.restartPolicy", "Never"},
		{"template without containers", withTemplate(corev1.PodSpec{}), "spec.template.spec.containers", ""},
		{"container name not a DNS label", withTemplate(main(corev1.Container{Name: "Main_Container"})), "spec.template.spec.containers[0].name", "RFC 1123"},
		{"env var name with =", withTemplate(main(corev1.Container{Env: []corev1.EnvVar{{Name: "MY=VAR", Value: "x"}}})), "spec.template.spec.containers[0].env[0].name", "MY=VAR"},
		{"volume mount of no volume", withTemplate(main(corev1.Container{VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}})), "spec.template.spec.containers[0].volumeMounts[0].name", "Not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			at := valid()
			tc.edit(at)
			err := adminClient.Create(t.Context(), at)
			g.Expect(err).To(Satisfy(apierrors.IsInvalid), "422 Invalid")
			g.Expect(err).To(MatchError(ContainSubstring(tc.wantField)))
			g.Expect(err).To(MatchError(ContainSubstring(tc.wantText)))
		})
	}

	t.Run("v1alpha1 schedule that is no time", func(t *testing.T) {
		g := NewWithT(t)
		u := bookSample(ns)
		u.Object["spec"] = map[string]any{"schedule": "someday", "command": "echo"}
		err := adminClient.Create(t.Context(), u)
		g.Expect(err).To(Satisfy(apierrors.IsInvalid))
		g.Expect(err).To(MatchError(ContainSubstring("spec.schedule")))
	})
	t.Run("v1alpha1 without a command", func(t *testing.T) {
		g := NewWithT(t)
		u := bookSample(ns)
		u.Object["spec"] = map[string]any{"schedule": "2099-01-01T00:00:00Z"}
		err := adminClient.Create(t.Context(), u)
		g.Expect(err).To(Satisfy(apierrors.IsInvalid), "422 Invalid")
		g.Expect(err).To(MatchError(ContainSubstring("spec.command or spec.template must be set")))
	})
}

func TestImmutableOnceFired(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newNamespace(t)
	at := &cnatv1beta1.At{
		ObjectMeta: metav1.ObjectMeta{Name: "fired", Namespace: ns},
		Spec:       cnatv1beta1.AtSpec{Schedule: "2020-01-01T00:00:00Z", Command: "sleep 3600"},
	}
	g.Expect(adminClient.Create(ctx, at)).To(Succeed())
	g.Eventually(func(g Gomega) int32 {
		g.Expect(adminClient.Get(ctx, client.ObjectKeyFromObject(at), at)).To(Succeed())
		return at.Status.Attempts
	}).Should(Equal(int32(1)))
	err := adminClient.Patch(ctx, at, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"command":"rm -rf /"}}`)))
	g.Expect(err).To(Satisfy(apierrors.IsInvalid))
	g.Expect(err).To(MatchError(ContainSubstring("spec.command cannot change once the At has fired")))
}

func TestConfusedDeputyGuard(t *testing.T) {
	ctx := t.Context()
	ns := newNamespace(t)
	g := NewWithT(t)
	grant := func(user string, resources ...rbacv1.PolicyRule) {
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns}, Rules: resources}
		g.Expect(adminClient.Create(ctx, role)).To(Succeed())
		binding := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		}
		g.Expect(adminClient.Create(ctx, binding)).To(Succeed())
	}
	createAts := rbacv1.PolicyRule{APIGroups: []string{cnatv1beta1.GroupVersion.Group}, Resources: []string{"ats"}, Verbs: []string{"create", "get"}}
	createPods := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}}
	grant("alice", createAts)
	grant("bob", createAts, createPods)

	as := func(name string) client.Client {
		user, err := testEnv.AddUser(envtest.User{Name: name, Groups: []string{"system:authenticated"}}, nil)
		g.Expect(err).NotTo(HaveOccurred())
		c, err := client.New(user.Config(), client.Options{Scheme: testScheme})
		g.Expect(err).NotTo(HaveOccurred())
		return c
	}
	newAt := func(name string) *cnatv1beta1.At {
		return &cnatv1beta1.At{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec:       cnatv1beta1.AtSpec{Schedule: "2099-01-01T00:00:00Z", Command: "cat /var/run/secrets/kubernetes.io/serviceaccount/token"},
		}
	}

	err := as("alice").Create(ctx, newAt("alice-at"))
	g.Expect(err).To(Satisfy(apierrors.IsForbidden), "alice may create Ats but not Pods")
	g.Expect(err).To(MatchError(ContainSubstring(`user "alice" may not create Pods in namespace "` + ns + `"`)))

	g.Expect(as("bob").Create(ctx, newAt("bob-at"))).To(Succeed(), "bob may create Pods, so he may create Ats")
}
