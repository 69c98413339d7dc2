package webhook

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/atpod"
	"github.com/programming-kubernetes/cnat/internal/manifests"
	"github.com/programming-kubernetes/cnat/test/testenv"
)

// The policy cnat-pod-claims (kustomize/base/policy), as the API server
// names it in a refusal, and the identity its messages name.
const (
	podClaimsRefusal   = "ValidatingAdmissionPolicy 'cnat-pod-claims' with binding 'cnat-pod-claims' denied request"
	onlyTheController  = "only the cnat controller (system:serviceaccount:cnat-system:cnat-controller) may"
	controllerIdentity = "system:serviceaccount:cnat-system:cnat-controller"
)

var (
	podClaimsOnce sync.Once
	podClaimsErr  error
)

// installPodClaims creates the objects of kustomize/base/policy, as
// kustomize renders them, in the suite's API server, once. The suite's own
// controller acts as a cluster administrator (system:masters), whom the
// policy exempts, so the other tests see no difference.
func installPodClaims(t *testing.T) {
	t.Helper()
	podClaimsOnce.Do(func() {
		objects, err := manifests.Build(context.Background(), filepath.Join(testenv.RepoRoot(), "kustomize", "base", "policy"))
		if err != nil {
			podClaimsErr = err
			return
		}
		for _, o := range objects {
			if err := adminClient.Create(context.Background(), o); err != nil && !apierrors.IsAlreadyExists(err) {
				podClaimsErr = err
				return
			}
		}
	})
	NewWithT(t).Expect(podClaimsErr).NotTo(HaveOccurred(), "installing kustomize/base/policy")
}

// impersonatingClient acts as user in groups (and system:authenticated),
// as the API server's impersonation lets the suite's administrator.
func impersonatingClient(t *testing.T, user string, groups ...string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(testEnv.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:authenticated")}
	c, err := client.New(cfg, client.Options{Scheme: testScheme})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return c
}

// grantInNamespace gives user the rules in namespace, and nothing else.
func grantInNamespace(t *testing.T, namespace, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	g := NewWithT(t)
	name := "grant-" + rbacName(user)
	g.Expect(adminClient.Create(t.Context(), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Rules: rules})).To(Succeed())
	g.Expect(adminClient.Create(t.Context(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	})).To(Succeed())
}

// rbacName is user as a valid object name.
func rbacName(user string) string {
	out := []byte(user)
	for i, c := range out {
		if c == ':' {
			out[i] = '.'
		}
	}
	return string(out)
}

func podRule(resource string, verbs ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{resource}, Verbs: verbs}
}

// expectClaimRefused checks that err is the policy's 403 and that its
// message says what was refused and who may do it.
func expectClaimRefused(g Gomega, err error, says ...string) {
	g.Expect(err).To(Satisfy(apierrors.IsForbidden), "refused as Forbidden")
	g.Expect(err).To(MatchError(ContainSubstring(podClaimsRefusal)))
	g.Expect(err).To(MatchError(ContainSubstring(onlyTheController)))
	for _, s := range says {
		g.Expect(err).To(MatchError(ContainSubstring(s)))
	}
}

func mergePatch(body string) client.Patch {
	return client.RawPatch(types.MergePatchType, []byte(body))
}

// plainTestPod is a Pod anyone who may create Pods may make, with none of
// cnat's keys.
func plainTestPod(namespace, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "main", Image: testDefaultImage, Command: []string{"true"}}},
		},
	}
}

// bindAndRun plays the scheduler and the kubelet for pod: bound to node-1,
// its command running.
func bindAndRun(g Gomega, ctx context.Context, pod *corev1.Pod) {
	g.Expect(adminClient.SubResource("binding").Create(ctx, pod, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"},
	})).To(Succeed())
	g.Expect(adminClient.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
	pod.Status = testenv.RunningStatus(pod, time.Now())
	g.Expect(adminClient.Status().Update(ctx, pod)).To(Succeed())
}

// runningAtPod creates an At that is due now and returns the Pod the
// controller created for it. Nothing runs it (envtest has no kubelet and
// no scheduler), so it stays unbound and Pending, claimed by its At, until
// the test plays its kubelet. Its container asks for as much as it may
// use, so that a resize keeps its QoS class.
func runningAtPod(t *testing.T, namespace, name string) *corev1.Pod {
	t.Helper()
	g := NewWithT(t)
	limits := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("32Mi")}
	at := &cnatv1beta1.At{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: cnatv1beta1.AtSpec{
			Schedule: time.Now().UTC().Format(time.RFC3339),
			Command:  "sleep 3600",
			Template: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "main", Image: testDefaultImage,
				Resources: corev1.ResourceRequirements{Requests: limits, Limits: limits},
			}}}},
		},
	}
	g.Expect(adminClient.Create(t.Context(), at)).To(Succeed())
	pod := &corev1.Pod{}
	g.Eventually(func() error {
		return adminClient.Get(t.Context(), client.ObjectKey{Namespace: namespace, Name: atpod.PodName(at, 1)}, pod)
	}).Should(Succeed(), "the controller creates the At's Pod")
	g.Expect(pod.Finalizers).To(ContainElement(cnatv1beta1.TrackingFinalizer))
	return pod
}

// TestPodClaimsOnEveryPath: a user who may create and patch Pods, and patch
// their status, ephemeral containers and resources, can neither forge nor
// change what makes a Pod an At's run, through any of these paths, nor
// change what an At's Pod runs; the controller's ServiceAccount can do its
// writes, a kubelet can report a Pod's status, and Pods that are not cnat's
// are left alone.
func TestPodClaimsOnEveryPath(t *testing.T) {
	installPodClaims(t)
	ctx := t.Context()
	ns := newNamespace(t)
	const user = "mallory"
	grantInNamespace(t, ns, user,
		podRule("pods", "create", "get", "patch", "update"),
		podRule("pods/status", "get", "patch", "update"),
		podRule("pods/ephemeralcontainers", "get", "patch", "update"),
		podRule("pods/resize", "get", "patch", "update"),
	)
	mallory := impersonatingClient(t, user)
	const node = "system:node:node-1"
	grantInNamespace(t, ns, node, podRule("pods", "get"), podRule("pods/status", "get", "patch", "update"))
	kubelet := impersonatingClient(t, node, "system:nodes")
	grantInNamespace(t, ns, controllerIdentity, podRule("pods", "create", "get", "patch"))
	cnat := impersonatingClient(t, controllerIdentity, "system:serviceaccounts", "system:serviceaccounts:cnat-system")

	// The policy is in force once a Pod with a claim label is refused (the
	// API server picks up a new policy within a second or so, longer when
	// it is busy).
	NewWithT(t).Eventually(func() error {
		pod := plainTestPod(ns, "probe")
		pod.Labels = map[string]string{cnatv1beta1.LabelAt: "probe"}
		return mallory.Create(ctx, pod, client.DryRunAll)
	}).WithTimeout(30*time.Second).Should(Satisfy(apierrors.IsForbidden), "the policy cnat-pod-claims is in force")

	claimed := runningAtPod(t, ns, "claimed")
	key := client.ObjectKeyFromObject(claimed)
	ref := func() *corev1.Pod { return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: ns}} }

	t.Run("claims added through pods/status are refused", func(t *testing.T) {
		g := NewWithT(t)
		pod := plainTestPod(ns, "forged-through-status")
		g.Expect(mallory.Create(ctx, pod)).To(Succeed(), "a Pod without claims is anyone's")
		err := mallory.Status().Patch(ctx, pod, mergePatch(`{"metadata":{"labels":{"`+cnatv1beta1.LabelAt+`":"claimed","`+cnatv1beta1.LabelAttempt+`":"1"}},"status":{"phase":"Succeeded"}}`))
		expectClaimRefused(g, err, "the labels "+cnatv1beta1.LabelAt+", "+cnatv1beta1.LabelAttempt+" mark a Pod as the run of an At", "add, change or remove them")
		g.Expect(adminClient.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		g.Expect(pod.Labels).NotTo(HaveKey(cnatv1beta1.LabelAt))
		g.Expect(pod.Status.Phase).NotTo(Equal(corev1.PodSucceeded))
	})

	t.Run("the tracking finalizer added through pods/status is refused", func(t *testing.T) {
		g := NewWithT(t)
		pod := plainTestPod(ns, "finalizer-through-status")
		g.Expect(mallory.Create(ctx, pod)).To(Succeed())
		err := mallory.Status().Patch(ctx, pod, mergePatch(`{"metadata":{"finalizers":["`+cnatv1beta1.TrackingFinalizer+`"]}}`))
		expectClaimRefused(g, err, "the finalizer "+cnatv1beta1.TrackingFinalizer, "add it")
		err = mallory.Status().Patch(ctx, pod, mergePatch(`{"metadata":{"finalizers":["`+cnatv1beta1.KeyPrefix+`other"]}}`))
		expectClaimRefused(g, err, "the finalizer "+cnatv1beta1.KeyPrefix+"other", "add or remove it")
	})

	t.Run("labelling an At's Pod released through pods/status is refused", func(t *testing.T) {
		g := NewWithT(t)
		err := mallory.Status().Patch(ctx, ref(), mergePatch(`{"metadata":{"labels":{"`+cnatv1beta1.LabelReleased+`":"true"}}}`))
		expectClaimRefused(g, err, "the label "+cnatv1beta1.LabelReleased+" says the At has recorded a Pod's run")
	})

	t.Run("removing the tracking finalizer of an At's Pod through pods/status is refused", func(t *testing.T) {
		g := NewWithT(t)
		err := mallory.Status().Patch(ctx, ref(), mergePatch(`{"metadata":{"finalizers":null}}`))
		expectClaimRefused(g, err, "the finalizer "+cnatv1beta1.TrackingFinalizer, "remove it")
	})

	for _, path := range []string{"pods", "pods/status"} {
		patch := func(p client.Patch) error {
			if path == "pods/status" {
				return mallory.Status().Patch(ctx, ref(), p)
			}
			return mallory.Patch(ctx, ref(), p)
		}
		t.Run("changing cnat's annotation on an At's Pod through "+path+" is refused", func(t *testing.T) {
			g := NewWithT(t)
			err := patch(mergePatch(`{"metadata":{"annotations":{"` + cnatv1beta1.AnnotationSpecHash + `":"0000000000000000"}}}`))
			expectClaimRefused(g, err, "the annotation "+cnatv1beta1.AnnotationSpecHash, "add, change or remove it")
			err = patch(mergePatch(`{"metadata":{"annotations":{"` + cnatv1beta1.AnnotationScheduledTime + `":null}}}`))
			expectClaimRefused(g, err, "the annotation "+cnatv1beta1.AnnotationScheduledTime)
		})
		t.Run("adding another cnat label to an At's Pod through "+path+" is refused", func(t *testing.T) {
			g := NewWithT(t)
			err := patch(mergePatch(`{"metadata":{"labels":{"` + cnatv1beta1.KeyPrefix + `anything":"x"}}}`))
			expectClaimRefused(g, err, "the label "+cnatv1beta1.KeyPrefix+"anything")
		})
		t.Run("an ordinary label and annotation on an At's Pod through "+path+" are allowed", func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(patch(mergePatch(`{"metadata":{"labels":{"team":"payments"},"annotations":{"example.com/note":"x"}}}`))).To(Succeed())
		})
	}

	t.Run("a Pod created with cnat's annotation is refused", func(t *testing.T) {
		g := NewWithT(t)
		pod := plainTestPod(ns, "forged-annotation")
		pod.Annotations = map[string]string{cnatv1beta1.AnnotationScheduledTime: "2026-11-21T08:00:00Z"}
		expectClaimRefused(g, mallory.Create(ctx, pod), "the annotation "+cnatv1beta1.AnnotationScheduledTime, "create a Pod that carries it")
	})

	t.Run("changing the image of an At's Pod is refused", func(t *testing.T) {
		g := NewWithT(t)
		err := mallory.Patch(ctx, ref(), client.RawPatch(types.StrategicMergePatchType,
			[]byte(`{"spec":{"containers":[{"name":"main","image":"docker.io/library/busybox:1.37"}]}}`)))
		expectClaimRefused(g, err, "spec.containers of an At's Pod")
	})

	t.Run("setting a deadline on an At's Pod is refused", func(t *testing.T) {
		g := NewWithT(t)
		err := mallory.Patch(ctx, ref(), mergePatch(`{"spec":{"activeDeadlineSeconds":1}}`))
		expectClaimRefused(g, err, "spec.activeDeadlineSeconds of an At's Pod")
	})

	t.Run("an ephemeral container in an At's Pod is refused", func(t *testing.T) {
		g := NewWithT(t)
		err := mallory.SubResource("ephemeralcontainers").Patch(ctx, ref(), client.RawPatch(types.StrategicMergePatchType,
			[]byte(`{"spec":{"ephemeralContainers":[{"name":"debug","image":"busybox:1.37","command":["sh"]}]}}`)))
		expectClaimRefused(g, err, "spec.ephemeralContainers of an At's Pod")
	})

	t.Run("resizing an At's Pod is refused", func(t *testing.T) {
		g := NewWithT(t)
		err := mallory.SubResource("resize").Patch(ctx, ref(), client.RawPatch(types.StrategicMergePatchType,
			[]byte(`{"spec":{"containers":[{"name":"main","resources":{"requests":{"cpu":"200m"},"limits":{"cpu":"200m"}}}]}}`)))
		expectClaimRefused(g, err, "spec.containers of an At's Pod")
	})

	t.Run("the At's Pod is as the controller made it", func(t *testing.T) {
		g := NewWithT(t)
		live := &corev1.Pod{}
		g.Expect(adminClient.Get(ctx, key, live)).To(Succeed())
		g.Expect(live.Labels).NotTo(HaveKey(cnatv1beta1.LabelReleased))
		g.Expect(live.Finalizers).To(ContainElement(cnatv1beta1.TrackingFinalizer))
		g.Expect(live.Annotations).To(HaveKeyWithValue(cnatv1beta1.AnnotationSpecHash, claimed.Annotations[cnatv1beta1.AnnotationSpecHash]))
		g.Expect(live.Spec.Containers[0].Image).To(Equal(testDefaultImage))
		g.Expect(live.Spec.EphemeralContainers).To(BeEmpty())
		g.Expect(live.Spec.ActiveDeadlineSeconds).To(BeNil())
	})

	t.Run("a kubelet reports the At's Pod running", func(t *testing.T) {
		g := NewWithT(t)
		live := &corev1.Pod{}
		// The scheduler binds it to the kubelet's node: a kubelet writes the
		// status of the Pods of its node only.
		g.Expect(adminClient.Get(ctx, key, live)).To(Succeed())
		g.Expect(adminClient.SubResource("binding").Create(ctx, live, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: live.Name}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"},
		})).To(Succeed())
		g.Expect(kubelet.Get(ctx, key, live)).To(Succeed())
		live.Status = testenv.RunningStatus(live, time.Now())
		live.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
		g.Expect(kubelet.Status().Update(ctx, live)).To(Succeed())
	})

	t.Run("a Pod that is not cnat's is left alone", func(t *testing.T) {
		g := NewWithT(t)
		pod := plainTestPod(ns, "ordinary")
		g.Expect(mallory.Create(ctx, pod)).To(Succeed())
		g.Expect(mallory.Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType,
			[]byte(`{"metadata":{"labels":{"team":"payments"}},"spec":{"containers":[{"name":"main","image":"busybox:1.36"}]}}`)))).To(Succeed())
		g.Expect(mallory.Status().Patch(ctx, pod, mergePatch(`{"metadata":{"labels":{"team":"billing"}},"status":{"phase":"Running"}}`))).To(Succeed())
		g.Expect(kubelet.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		pod.Status = testenv.TerminatedStatus(pod, 0, time.Now())
		g.Expect(kubelet.Status().Update(ctx, pod)).To(Succeed())
	})

	t.Run("the controller's ServiceAccount creates and releases its Pods, the garbage collector orphans them", func(t *testing.T) {
		g := NewWithT(t)
		// A Pod as the controller makes it, for an At that exists only here:
		// without the at label, which would have the suite's own controller
		// release it as the Pod of an At that is gone.
		at := &cnatv1beta1.At{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: ns, UID: "0f0e0d0c-0000-4000-8000-000000000001"}}
		at.Spec.Command = "true"
		pod := atpod.NewPod(at, 1, time.Now(), atpod.PodOptions{DefaultImage: testDefaultImage})
		delete(pod.Labels, cnatv1beta1.LabelAt)
		expectClaimRefused(g, mallory.Create(ctx, pod.DeepCopy()), "may create a Pod that carries")

		g.Expect(cnat.Create(ctx, pod)).To(Succeed())
		release := `{"metadata":{"labels":{"` + cnatv1beta1.LabelReleased + `":"true"},"$deleteFromPrimitiveList/finalizers":["` + cnatv1beta1.TrackingFinalizer + `"]}}`
		expectClaimRefused(g, mallory.Patch(ctx, pod.DeepCopy(), client.RawPatch(types.StrategicMergePatchType, []byte(release))))
		g.Expect(cnat.Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, []byte(release)))).To(Succeed())
		g.Expect(pod.Finalizers).NotTo(ContainElement(cnatv1beta1.TrackingFinalizer))
		g.Expect(pod.Labels).To(HaveKeyWithValue(cnatv1beta1.LabelReleased, "true"))

		// The garbage collector, as kube-controller-manager runs it with
		// --use-service-account-credentials, orphans the Pod of an At
		// deleted with --cascade=orphan.
		const gc = "system:serviceaccount:kube-system:generic-garbage-collector"
		grantInNamespace(t, ns, gc, podRule("pods", "get", "patch"))
		orphan := mergePatch(`{"metadata":{"ownerReferences":null}}`)
		expectClaimRefused(g, mallory.Patch(ctx, pod.DeepCopy(), orphan), "the ownerReference to At elsewhere")
		g.Expect(impersonatingClient(t, gc, "system:serviceaccounts", "system:serviceaccounts:kube-system").Patch(ctx, pod, orphan)).To(Succeed())
		g.Expect(pod.OwnerReferences).To(BeEmpty())
	})
}
