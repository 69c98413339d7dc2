//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1alpha1 "github.com/programming-kubernetes/cnat/api/v1alpha1"
	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// timeout bounds every wait: runs take seconds, retries 10 s more.
const timeout = 60 * time.Second

func TestBookSample(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := testNamespace(t)
	book := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cnat.programming-kubernetes.info/v1alpha1",
		"kind":       "At",
		"metadata":   map[string]any{"name": "example-at", "namespace": ns},
		"spec":       map[string]any{"schedule": "2019-04-12T10:12:00Z", "command": "echo YAY"},
	}}
	g.Expect(admin.Create(context.Background(), book)).To(Succeed())

	g.Eventually(func(g Gomega) string {
		at := &cnatv1alpha1.At{}
		g.Expect(admin.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "example-at"}, at)).To(Succeed())
		return at.Status.Phase
	}, timeout).Should(Equal(cnatv1alpha1.PhaseDone))
	at := get(g, ns, "example-at")
	g.Expect(at.Status.Phase).To(Equal(cnatv1beta1.PhaseSucceeded))
	g.Expect(at.Status.ExitCode).To(Equal(ptr.To[int32](0)))
}

func TestRunsOnTimeInItsTimeZone(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := testNamespace(t)
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	g.Expect(err).NotTo(HaveOccurred())
	scheduled := time.Now().Add(8 * time.Second).Truncate(time.Second)
	at := runs(ns, "tokyo", scheduled.In(tokyo).Format("2006-01-02T15:04:05"), "echo konnichiwa", 0, time.Second)
	at.Spec.TimeZone = ptr.To("Asia/Tokyo")
	g.Expect(admin.Create(context.Background(), at)).To(Succeed())

	g.Eventually(phaseOf(ns, "tokyo"), timeout).Should(Equal(cnatv1beta1.PhasePending))
	g.Expect(get(g, ns, "tokyo").Status.ScheduledTime.Time).To(BeTemporally("==", scheduled))
	g.Consistently(func(g Gomega) []corev1.Pod { return podsOf(g, ns, "tokyo") }, time.Until(scheduled)-time.Second, 250*time.Millisecond).
		Should(BeEmpty(), "nothing runs before its time")

	g.Eventually(phaseOf(ns, "tokyo"), timeout).Should(Equal(cnatv1beta1.PhaseSucceeded))
	done := get(g, ns, "tokyo")
	g.Expect(done.Status.ExitCode).To(Equal(ptr.To[int32](0)))
	g.Expect(done.Status.StartTime.Time).To(BeTemporally(">=", scheduled))
	g.Expect(meta.IsStatusConditionTrue(done.Status.Conditions, cnatv1beta1.ConditionSucceeded)).To(BeTrue())
	g.Expect(meta.IsStatusConditionTrue(done.Status.Conditions, cnatv1beta1.ConditionReady)).To(BeTrue())
	pods := podsOf(g, ns, "tokyo")
	g.Expect(pods).To(HaveLen(1))
	g.Expect(pods[0].CreationTimestamp.Time).To(BeTemporally(">=", scheduled))
	g.Eventually(func(g Gomega) []string { return eventReasons(g, ns, "tokyo") }, timeout).
		Should(ContainElement("Succeeded"))
	g.Expect(eventReasons(g, ns, "tokyo")).NotTo(ContainElement("Started"), "a start is no Event: the conditions and attempts say it")
}

func TestFailureWithExitCode(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := testNamespace(t)
	g.Expect(admin.Create(context.Background(), runs(ns, "fails", in(0), "exit 3", 3, time.Second))).To(Succeed())

	g.Eventually(phaseOf(ns, "fails"), timeout).Should(Equal(cnatv1beta1.PhaseFailed))
	at := get(g, ns, "fails")
	g.Expect(at.Status.ExitCode).To(Equal(ptr.To[int32](3)))
	pods := podsOf(g, ns, "fails")
	g.Expect(pods).To(HaveLen(1))
	expectOnTestNodes(g, pods[0], true)
	g.Expect(at.Status.Reason).To(Equal(cnatv1beta1.ReasonError))
	g.Expect(meta.IsStatusConditionTrue(at.Status.Conditions, cnatv1beta1.ConditionFailed)).To(BeTrue())
	g.Expect(meta.IsStatusConditionTrue(at.Status.Conditions, cnatv1beta1.ConditionStalled)).To(BeTrue())
	g.Eventually(func(g Gomega) []string { return eventReasons(g, ns, "fails") }, timeout).Should(ContainElement("Failed"))
}

func TestRetries(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := testNamespace(t)
	at := runs(ns, "flaky", in(0), "exit 1", 1, time.Second)
	at.Spec.BackoffLimit = ptr.To[int32](1)
	g.Expect(admin.Create(context.Background(), at)).To(Succeed())

	g.Eventually(func(g Gomega) string { return get(g, ns, "flaky").Status.Reason }, timeout).Should(Equal(cnatv1beta1.ReasonRetrying))
	g.Eventually(phaseOf(ns, "flaky"), timeout).Should(Equal(cnatv1beta1.PhaseFailed))
	done := get(g, ns, "flaky")
	g.Expect(done.Status.Attempts).To(Equal(int32(2)))
	g.Expect(done.Status.Reason).To(Equal(cnatv1beta1.ReasonBackoffLimitExceeded))
	g.Expect(podsOf(g, ns, "flaky")).To(HaveLen(2), "one Pod per attempt")
}

func TestMissedDeadline(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := testNamespace(t)
	at := runs(ns, "late", in(-5*time.Minute), "echo too late", 0, time.Second)
	at.Spec.StartingDeadlineSeconds = ptr.To[int64](60)
	g.Expect(admin.Create(context.Background(), at)).To(Succeed())

	g.Eventually(phaseOf(ns, "late"), timeout).Should(Equal(cnatv1beta1.PhaseMissed))
	g.Expect(podsOf(g, ns, "late")).To(BeEmpty())
	g.Eventually(func(g Gomega) []string { return eventReasons(g, ns, "late") }, timeout).Should(ContainElement("Missed"))
}

func TestSuspendAndResume(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := testNamespace(t)
	at := runs(ns, "held", in(0), "echo resumed", 0, time.Second)
	at.Spec.Suspend = ptr.To(true)
	g.Expect(admin.Create(context.Background(), at)).To(Succeed())

	g.Eventually(func(g Gomega) string { return get(g, ns, "held").Status.Reason }, timeout).Should(Equal(cnatv1beta1.ReasonSuspended))
	g.Consistently(func(g Gomega) []corev1.Pod { return podsOf(g, ns, "held") }, 3*time.Second).Should(BeEmpty())

	g.Expect(admin.Patch(context.Background(), at, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":false}}`)))).To(Succeed())
	g.Eventually(phaseOf(ns, "held"), timeout).Should(Equal(cnatv1beta1.PhaseSucceeded))
}

// retryWatch is how long a test watches for a retry that must not come:
// longer than the first retry's backoff (10 s, counted from when the
// controller saw the failure), so a retry would show.
const retryWatch = 15 * time.Second

func TestPodDeletedWhileRunning(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := testNamespace(t)
	at := runs(ns, "victim", in(0), "sleep 300", 0, 300*time.Second)
	at.Spec.BackoffLimit = ptr.To[int32](2)
	g.Expect(admin.Create(context.Background(), at)).To(Succeed())
	var victim corev1.Pod
	g.Eventually(func(g Gomega) corev1.PodPhase {
		pods := podsOf(g, ns, "victim")
		g.Expect(pods).To(HaveLen(1))
		victim = pods[0]
		return victim.Status.Phase
	}, timeout).Should(Equal(corev1.PodRunning))
	// The simulated kubelet may report the Pod Running before the controller
	// has written the attempt into the At's status.
	g.Eventually(func(g Gomega) string { return get(g, ns, "victim").Status.PodName }, timeout).Should(Equal(victim.Name))

	g.Expect(admin.Delete(context.Background(), &victim)).To(Succeed())
	g.Eventually(phaseOf(ns, "victim"), timeout).Should(Equal(cnatv1beta1.PhaseFailed))
	g.Expect(get(g, ns, "victim").Status.Reason).To(Equal(cnatv1beta1.ReasonPodDeleted))
	g.Consistently(func(g Gomega) []string {
		var names []string
		for _, p := range podsOf(g, ns, "victim") {
			names = append(names, p.Name) // the deleted Pod may still be terminating
		}
		return names
	}, retryWatch).Should(Not(ContainElement(Not(Equal(victim.Name)))), "not run again, even with retries left")
}

func TestTTLAfterFinished(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := testNamespace(t)
	at := runs(ns, "ephemeral", in(0), "echo bye", 0, time.Second)
	at.Spec.TTLSecondsAfterFinished = ptr.To[int32](3)
	g.Expect(admin.Create(context.Background(), at)).To(Succeed())

	g.Eventually(phaseOf(ns, "ephemeral"), timeout).Should(Equal(cnatv1beta1.PhaseSucceeded))
	g.Eventually(func() error {
		return admin.Get(context.Background(), client.ObjectKeyFromObject(at), &cnatv1beta1.At{})
	}, timeout).Should(Satisfy(apierrors.IsNotFound), "the At is deleted after its TTL")
	g.Eventually(func(g Gomega) []corev1.Pod { return podsOf(g, ns, "ephemeral") }, timeout).Should(BeEmpty(), "and its Pod with it")
}

func TestGarbageCollection(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := testNamespace(t)
	at := runs(ns, "collected", in(0), "sleep 300", 0, 300*time.Second)
	g.Expect(admin.Create(context.Background(), at)).To(Succeed())
	g.Eventually(func(g Gomega) []corev1.Pod { return podsOf(g, ns, "collected") }, timeout).Should(HaveLen(1))

	g.Expect(admin.Delete(context.Background(), at)).To(Succeed())
	g.Eventually(func(g Gomega) []corev1.Pod { return podsOf(g, ns, "collected") }, timeout).
		Should(BeEmpty(), "the garbage collector deletes the Pods of a deleted At")
}

func TestBadInputRefused(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	for name, tc := range map[string]struct {
		edit      func(*cnatv1beta1.At)
		wantField string
	}{
		"unknown time zone": {func(a *cnatv1beta1.At) {
			a.Spec.Schedule, a.Spec.TimeZone = "2099-01-01T09:00", ptr.To("Atlantis/Capital")
		}, "spec.timeZone"},
		"no offset":          {func(a *cnatv1beta1.At) { a.Spec.Schedule = "2099-01-01T09:00:00" }, "spec.schedule"},
		"31 April":           {func(a *cnatv1beta1.At) { a.Spec.Schedule = "2099-04-31T09:00:00Z" }, "spec.schedule"},
		"restartPolicy":      {func(a *cnatv1beta1.At) { a.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways }, "spec.template.spec.restartPolicy"},
		"bad container name": {func(a *cnatv1beta1.At) { a.Spec.Template.Spec.Containers[0].Name = "Not_A_Label" }, "spec.template.spec.containers[0].name"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			at := runs(ns, "bad", in(time.Hour), "echo", 0, time.Second)
			tc.edit(at)
			err := admin.Create(context.Background(), at)
			g.Expect(err).To(Satisfy(apierrors.IsInvalid))
			g.Expect(err).To(MatchError(ContainSubstring(tc.wantField)))
		})
	}
}

// TestConfusedDeputyGuard impersonates two users who may create Ats; only
// the one who may also create Pods gets one.
func TestConfusedDeputyGuard(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := testNamespace(t)
	ctx := context.Background()
	rules := map[string][]rbacv1.PolicyRule{
		"at-only": {{APIGroups: []string{cnatv1beta1.GroupVersion.Group}, Resources: []string{"ats"}, Verbs: []string{"create"}}},
		"at-and-pods": {
			{APIGroups: []string{cnatv1beta1.GroupVersion.Group}, Resources: []string{"ats"}, Verbs: []string{"create"}},
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}},
		},
	}
	as := map[string]client.Client{}
	for user, r := range rules {
		g.Expect(admin.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns}, Rules: r})).To(Succeed())
		g.Expect(admin.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "e2e-" + user}},
		})).To(Succeed())
		cfg := rest.CopyConfig(restConfig)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "e2e-" + user, Groups: []string{"system:authenticated"}}
		c, err := client.New(cfg, client.Options{Scheme: scheme})
		g.Expect(err).NotTo(HaveOccurred())
		as[user] = c
	}

	err := as["at-only"].Create(ctx, runs(ns, "deputy", in(time.Hour), "id", 0, time.Second))
	g.Expect(err).To(Satisfy(apierrors.IsForbidden))
	g.Expect(err).To(MatchError(ContainSubstring("may not create Pods")))
	g.Expect(as["at-and-pods"].Create(ctx, runs(ns, "allowed", in(time.Hour), "id", 0, time.Second))).To(Succeed())
}

func TestBothVersions(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := testNamespace(t)
	at := runs(ns, "versions", "2099-12-31T23:59", "echo happy new year", 0, time.Second)
	at.Spec.TimeZone = ptr.To("Pacific/Kiritimati")
	at.Spec.BackoffLimit = ptr.To[int32](3)
	g.Expect(admin.Create(context.Background(), at)).To(Succeed())

	book := &cnatv1alpha1.At{}
	g.Eventually(func(g Gomega) string {
		g.Expect(admin.Get(context.Background(), client.ObjectKeyFromObject(at), book)).To(Succeed())
		return book.Status.Phase
	}, timeout).Should(Equal(cnatv1alpha1.PhasePending))
	g.Expect(book.Spec.Command).To(Equal("echo happy new year"))

	book.Labels = map[string]string{"touched-by": "v1alpha1"}
	g.Expect(admin.Update(context.Background(), book)).To(Succeed())
	back := get(g, ns, "versions")
	g.Expect(back.Labels).To(HaveKeyWithValue("touched-by", "v1alpha1"))
	g.Expect(back.Spec.TimeZone).To(Equal(ptr.To("Pacific/Kiritimati")))
	g.Expect(back.Spec.BackoffLimit).To(Equal(ptr.To[int32](3)))
	g.Expect(back.Spec.Template.Annotations).To(HaveKeyWithValue(simulateDuration, "1s"))
	g.Expect(eventReasons(g, ns, "versions")).NotTo(ContainElement(ContainSubstring("Failed")))
}
