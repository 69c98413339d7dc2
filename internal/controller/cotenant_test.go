package controller

import (
	"context"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/atcache"
	"github.com/programming-kubernetes/cnat/test/testenv"
)

// These tests attack the controller as a co-tenant who has read its code
// would, where the Pod-claim policy is not installed (the controller is the
// last line): Pods squatting the At's name with decoy owners, an admission
// webhook that answers 409, a mutating admission that strips cnat's claims,
// a LimitRange, forced deletions, a restart between a deletion and its end,
// an image patched under a running command.

// TestDecoyOwnersAreReported: a Pod under the name of the At's first
// attempt that claims the At in every way but one is not its run. The At
// says which Pod and why, keeps no attempt, is retried, and is Missed at its
// deadline; the Pod is untouched.
func TestDecoyOwnersAreReported(t *testing.T) {
	for name, tc := range map[string]struct {
		decoy    func(at *cnatv1beta1.At) ([]metav1.OwnerReference, map[string]string)
		wantWhy  string
		withPods bool
	}{
		"a Decoy controller with the At's UID, no labels": {
			decoy: func(at *cnatv1beta1.At) ([]metav1.OwnerReference, map[string]string) {
				return []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Decoy", Name: "d", UID: at.UID, Controller: ptr.To(true)}}, nil
			},
			wantWhy: "its controller is Decoy d",
		},
		"cnat's claims, a controller of another kind in cnat's group with the At's UID": {
			decoy: func(at *cnatv1beta1.At) ([]metav1.OwnerReference, map[string]string) {
				return []metav1.OwnerReference{{APIVersion: cnatv1beta1.GroupVersion.String(), Kind: "Decoy", Name: "d", UID: at.UID, Controller: ptr.To(true)}},
					map[string]string{cnatv1beta1.LabelAt: at.Name, cnatv1beta1.LabelAtUID: string(at.UID), cnatv1beta1.LabelAttempt: "1"}
			},
			wantWhy: "its controller is Decoy d",
		},
		"cnat's claims, an At of another group with the At's UID": {
			decoy: func(at *cnatv1beta1.At) ([]metav1.OwnerReference, map[string]string) {
				return []metav1.OwnerReference{{APIVersion: "cnat.example.com/v1beta1", Kind: "At", Name: at.Name, UID: at.UID, Controller: ptr.To(true)}},
					map[string]string{cnatv1beta1.LabelAt: at.Name, cnatv1beta1.LabelAtUID: string(at.UID), cnatv1beta1.LabelAttempt: "1"}
			},
			wantWhy: "cnat.example.com/v1beta1",
		},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			at := h.createAt("squatted", cnatv1beta1.AtSpec{Schedule: schedule(start.Add(time.Minute)), Command: "echo mine", StartingDeadlineSeconds: ptr.To[int64](120)})
			h.reconcile("squatted")
			podName := h.podName("squatted", 1)
			refs, labels := tc.decoy(at)
			decoy := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: podName, Namespace: h.ns, Labels: labels, OwnerReferences: refs},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "alpine"}}},
			}
			h.g.Expect(apiClient.Create(h.ctx, decoy)).To(Succeed())
			before := h.pod(podName)

			h.clock.Step(time.Minute)
			for range 2 {
				err := h.reconcileErr("squatted")
				h.g.Expect(err).To(HaveOccurred(), "retried with backoff")
				h.g.Expect(reconcile.TerminalError(nil)).NotTo(MatchError(err), "not terminal")
			}
			got := h.at("squatted")
			h.g.Expect(got.Status.Phase).To(Equal(cnatv1beta1.PhasePending))
			h.g.Expect(got.Status.Reason).To(Equal(cnatv1beta1.ReasonPodNameTaken))
			h.g.Expect(got.Status.Message).To(And(ContainSubstring(podName), ContainSubstring(tc.wantWhy)))
			h.g.Expect(got.Status.Attempts).To(BeZero(), "nothing of the At's started")
			h.g.Expect(got.Status.PodName).To(BeEmpty())
			h.g.Expect(h.pod(podName).ResourceVersion).To(Equal(before.ResourceVersion), "the decoy is untouched")

			h.clock.Step(3 * time.Minute)
			h.reconcile("squatted")
			h.g.Expect(h.at("squatted").Status.Phase).To(Equal(cnatv1beta1.PhaseMissed), "its deadline passed while the name was taken")
		})
	}
}

// TestAlreadyExistsWithNoPodIsARefusal: an admission webhook that refuses a
// Pod with reason AlreadyExists ("a run is already in progress") while no
// Pod of that name exists: the At says so at once, like any refusal, and
// runs once the webhook lets the Pod through.
func TestAlreadyExistsWithNoPodIsARefusal(t *testing.T) {
	h := newHarness(t)
	refusing := true
	h.r = h.newReconciler(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if _, isPod := obj.(*corev1.Pod); isPod && refusing {
			return apierrors.NewAlreadyExists(schema.GroupResource{Resource: "pods"}, "a run of this job is already in progress")
		}
		return c.Create(ctx, obj, opts...)
	}})
	h.createAt("refused", cnatv1beta1.AtSpec{Schedule: schedule(start), Command: "echo"})
	h.g.Expect(h.reconcileErr("refused")).To(HaveOccurred(), "retried with backoff")
	at := h.at("refused")
	h.g.Expect(at.Status.Reason).To(Equal(cnatv1beta1.ReasonPodForbidden))
	h.g.Expect(at.Status.Message).To(And(ContainSubstring("already in progress"), ContainSubstring("no Pod of that name exists")))
	h.g.Expect(condition(at, cnatv1beta1.ConditionReconciling).Status).To(Equal(metav1.ConditionTrue))

	refusing = false
	h.g.Expect(h.reconcileErr("refused")).To(Succeed())
	h.g.Expect(h.pods("refused")).To(HaveLen(1))
}

// TestWebhookConflictIsARefusal: an admission webhook that refuses the Pod
// with code 409 and no reason (as the API server relays a webhook's denial)
// reads as a conflict to apierrors.IsConflict. It is a refusal all the same:
// said on the At and returned as an error, so the work queue retries it with
// the errors' backoff and its namespace's share (retries.go), never as a
// stale copy of the At re-read at once, outside both.
func TestWebhookConflictIsARefusal(t *testing.T) {
	h := newHarness(t)
	refusing := true
	h.r = h.newReconciler(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if _, isPod := obj.(*corev1.Pod); isPod && refusing {
			return &apierrors.StatusError{ErrStatus: metav1.Status{
				Status: metav1.StatusFailure, Code: http.StatusConflict,
				Message: `admission webhook "runs.example.com" denied the request: a run of this job is in progress`,
			}}
		}
		return c.Create(ctx, obj, opts...)
	}})
	h.createAt("refused", cnatv1beta1.AtSpec{Schedule: schedule(start), Command: "echo"})
	for range 2 {
		res, err := h.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: h.ns, Name: "refused"}})
		h.g.Expect(err).To(HaveOccurred(), "an error, for the work queue's retry limiter")
		h.g.Expect(reconcile.TerminalError(nil)).NotTo(MatchError(err), "not terminal")
		h.g.Expect(res.RequeueAfter).To(BeZero(), "not the conflict path's requeue")
		at := h.at("refused")
		h.g.Expect(at.Status.Reason).To(Equal(cnatv1beta1.ReasonPodForbidden))
		h.g.Expect(at.Status.Message).To(ContainSubstring("a run of this job is in progress"))
	}
	refusing = false
	h.g.Expect(h.reconcileErr("refused")).To(Succeed())
	h.g.Expect(h.pods("refused")).To(HaveLen(1))
}

// TestPodStrippedOfClaimsIsReported: a mutating admission that takes cnat's
// labels off the Pod as it is created leaves a Pod the controller's cache
// never shows. The At says so instead of waiting for a watch event that
// never comes, and no second Pod is ever created for the attempt.
func TestPodStrippedOfClaimsIsReported(t *testing.T) {
	h := newHarness(t)
	h.r = h.newReconciler(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if pod, isPod := obj.(*corev1.Pod); isPod {
			pod.Labels = map[string]string{"mutated": "true"}
		}
		return c.Create(ctx, obj, opts...)
	}})
	h.createAt("stripped", cnatv1beta1.AtSpec{Schedule: schedule(start), Command: "echo"})
	for range 2 {
		h.g.Expect(h.reconcileErr("stripped")).To(HaveOccurred(), "retried with backoff")
		at := h.at("stripped")
		h.g.Expect(at.Status.Reason).To(Equal(cnatv1beta1.ReasonPodNameTaken))
		h.g.Expect(at.Status.Message).To(ContainSubstring("do not name this At"))
	}
	var pods corev1.PodList
	h.g.Expect(apiClient.List(h.ctx, &pods, client.InNamespace(h.ns))).To(Succeed())
	h.g.Expect(pods.Items).To(HaveLen(1), "one Pod for the attempt, never a second")
	h.g.Expect(pods.Items[0].Finalizers).NotTo(ContainElement(cnatv1beta1.TrackingFinalizer), "released: nothing would ever release a Pod the cache cannot see")
}

// TestPodCreateIsFollowedWithin30s: after it creates a Pod, the controller
// looks at the At again within 30 s whatever the Pod's watch brings.
func TestPodCreateIsFollowedWithin30s(t *testing.T) {
	h := newHarness(t)
	h.createAt("created", cnatv1beta1.AtSpec{Schedule: schedule(start), Command: "echo"})
	res := h.reconcile("created")
	h.g.Expect(h.pods("created")).To(HaveLen(1))
	h.g.Expect(res.RequeueAfter).To(And(BeNumerically(">", 0), BeNumerically("<=", 30*time.Second+atcache.WakeUpPad)))
}

// TestLimitRangeIsRetriedNotInvalidSpec: a LimitRange whose default limit
// is below the template's request makes the API server refuse the Pod's
// fields, though the spec itself is valid. The At says PodInvalid, is
// retried (never a terminal InvalidSpec) and runs once the LimitRange is
// removed.
func TestLimitRangeIsRetriedNotInvalidSpec(t *testing.T) {
	h := newHarness(t)
	limits := &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Name: "small", Namespace: h.ns},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type:    corev1.LimitTypeContainer,
			Default: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
		}}},
	}
	h.g.Expect(apiClient.Create(h.ctx, limits)).To(Succeed())
	h.createAt("limited", cnatv1beta1.AtSpec{Schedule: schedule(start), StartingDeadlineSeconds: ptr.To[int64](600), Template: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "main", Image: "busybox", Command: []string{"true"}, Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
		}}},
	}}})
	h.g.Eventually(func(g Gomega) {
		err := h.reconcileErr("limited")
		g.Expect(err).To(HaveOccurred())
		g.Expect(reconcile.TerminalError(nil)).NotTo(MatchError(err), "not terminal")
		g.Expect(h.atWith(g, "limited").Status.Reason).To(Equal(cnatv1beta1.ReasonPodInvalid))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed(), "refused once the LimitRange reaches admission")
	at := h.at("limited")
	h.g.Expect(condition(at, cnatv1beta1.ConditionStalled)).To(BeNil(), "not stalled: retried")
	h.g.Expect(at.Status.Message).To(ContainSubstring("limit"))

	h.g.Expect(apiClient.Delete(h.ctx, limits)).To(Succeed())
	h.g.Eventually(func(g Gomega) {
		g.Expect(h.reconcileErr("limited")).To(Succeed())
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed(), "runs once the LimitRange is gone")
	h.g.Expect(h.pods("limited")).To(HaveLen(1))
}

// TestForcedDeletionIsAnInterruption: a running Pod deleted with
// --grace-period=0 --force is an interrupted run: recorded as PodStopping
// while its node may still run it, then PodDeleted, never attempt 2.
func TestForcedDeletionIsAnInterruption(t *testing.T) {
	h := newHarness(t)
	podName := h.runningAt("forced")
	h.g.Expect(apiClient.Delete(h.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: podName, Namespace: h.ns}}, client.GracePeriodSeconds(0))).To(Succeed())
	h.reconcile("forced")
	h.g.Expect(h.at("forced").Status.Reason).To(Equal(cnatv1beta1.ReasonPodStopping), "recorded where a restarted controller reads it")

	h.finishPod(podName, 137)
	h.r = h.newReconciler(interceptor.Funcs{}) // a restart: nothing remembered but the status
	h.reconcile("forced")
	at := h.at("forced")
	h.g.Expect(at.Status.Phase).To(Equal(cnatv1beta1.PhaseFailed))
	h.g.Expect(at.Status.Reason).To(Equal(cnatv1beta1.ReasonPodDeleted))
	h.clock.Step(time.Hour)
	h.reconcile("forced")
	h.g.Expect(h.pods("forced")).To(BeEmpty(), "never attempt 2, though retries are left")
}

// TestRestartBetweenDeletionAndItsEnd: the controller is down while a user
// deletes the running Pod and its kubelet ends and deletes it; the command
// exited 0 on SIGTERM. The kubelet's report carries the generation the
// deletion gave the Pod (status.observedGeneration): the restarted
// controller neither reports Succeeded nor runs attempt 2, and says why.
func TestRestartBetweenDeletionAndItsEnd(t *testing.T) {
	h := newHarness(t)
	podName := h.runningAt("unseen")
	h.g.Expect(apiClient.Delete(h.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: podName, Namespace: h.ns}})).To(Succeed())
	pod := h.pod(podName)
	pod.Status = testenv.TerminatedStatus(pod, 0, h.clock.Now())
	pod.Status.ObservedGeneration = pod.Generation
	h.g.Expect(apiClient.Status().Update(h.ctx, pod)).To(Succeed())
	h.removeStoppedPod(podName)

	h.r = h.newReconciler(interceptor.Funcs{})
	h.reconcile("unseen")
	at := h.at("unseen")
	h.g.Expect(at.Status.Phase).To(Equal(cnatv1beta1.PhaseFailed), "never Succeeded")
	h.g.Expect(at.Status.Reason).To(Equal(cnatv1beta1.ReasonPodDeleted))
	h.g.Expect(at.Status.Message).To(ContainSubstring("cannot be known"))
	h.clock.Step(time.Hour)
	h.reconcile("unseen")
	h.g.Expect(h.pods("unseen")).To(BeEmpty(), "never attempt 2")
}

// TestRestartedCommandIsNotACleanRun: the command's container restarted
// within the attempt (its image was patched under it) and then exited 0:
// the command ran twice, which is never one clean Succeeded.
func TestRestartedCommandIsNotACleanRun(t *testing.T) {
	h := newHarness(t)
	podName := h.runningAt("patched")
	pod := h.bindPod(podName)
	pod.Status = testenv.TerminatedStatus(pod, 0, h.clock.Now())
	pod.Status.ContainerStatuses[0].RestartCount = 1
	h.g.Expect(apiClient.Status().Update(h.ctx, pod)).To(Succeed())
	h.reconcile("patched")
	at := h.at("patched")
	h.g.Expect(at.Status.Phase).To(Equal(cnatv1beta1.PhaseFailed))
	h.g.Expect(at.Status.Reason).To(Equal(cnatv1beta1.ReasonCommandRestarted))
	h.clock.Step(time.Hour)
	h.reconcile("patched")
	h.g.Expect(h.pods("patched")).To(HaveLen(1), "not run again")
}
