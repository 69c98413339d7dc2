package controller

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/test/testenv"
)

// These tests attack the guarantees with what was seen to break them: an
// At deleted and created again under its name, a controller that dies
// between its writes while a janitor deletes finished Pods, a Pod in the
// way that is not the At's, a Pod killed by its deletion.

// TestRecreatedAtRunsItsOwnCommand deletes a finished At, leaving its Pod
// behind as `kubectl delete --cascade=orphan` or a slow garbage collector
// does, and creates it again under the same name, once with another
// command and once with the same: each incarnation runs its own command in
// its own Pod and reports that Pod's outcome, never the old one's.
func TestRecreatedAtRunsItsOwnCommand(t *testing.T) {
	for name, command := range map[string]string{"another command": "exit 3", "the same command": "echo first"} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			first := h.createAt("gitops", cnatv1beta1.AtSpec{Schedule: schedule(start), Command: "echo first"})
			h.reconcile("gitops")
			oldPod := h.podName("gitops", 1)
			h.finishPod(oldPod, 0)
			h.reconcile("gitops")
			h.g.Expect(h.at("gitops").Status.Phase).To(Equal(cnatv1beta1.PhaseSucceeded))

			h.g.Expect(apiClient.Delete(h.ctx, first)).To(Succeed())
			orphan := h.pod(oldPod)
			orphan.OwnerReferences = nil // what the garbage collector does with --cascade=orphan
			h.g.Expect(apiClient.Update(h.ctx, orphan)).To(Succeed())

			second := h.createAt("gitops", cnatv1beta1.AtSpec{Schedule: schedule(start), Command: command})
			h.g.Expect(second.UID).NotTo(Equal(first.UID))
			h.reconcile("gitops")
			h.reconcile("gitops") // the Pod's watch event
			at := h.at("gitops")
			newPod := h.podName("gitops", 1)
			h.g.Expect(newPod).NotTo(Equal(oldPod), "the Pod's name carries the At's UID")
			h.g.Expect(at.Status.Phase).To(Equal(cnatv1beta1.PhaseRunning), "the new At runs: %s", at.Status.Message)
			h.g.Expect(at.Status.PodName).To(Equal(newPod))
			h.g.Expect(h.pod(newPod).Spec.Containers[0].Command).To(Equal([]string{"/bin/sh", "-c", command}))

			old := h.pod(oldPod)
			h.g.Expect(old.Finalizers).To(BeEmpty(), "the old incarnation's Pod is released: its At is gone")
			h.g.Expect(old.Spec.Containers[0].Command).To(Equal([]string{"/bin/sh", "-c", "echo first"}), "and not changed otherwise")
			h.g.Expect(old.OwnerReferences).To(BeEmpty(), "nor adopted")

			h.finishPod(newPod, 3)
			h.reconcile("gitops")
			at = h.at("gitops")
			h.g.Expect(at.Status.Phase).To(Equal(cnatv1beta1.PhaseFailed), "the new run's own outcome")
			h.g.Expect(*at.Status.ExitCode).To(Equal(int32(3)))
		})
	}
}

// TestPodGoneBeforeRecordedIsNotRunAgain: the controller creates the Pod
// and dies before writing the status; the Pod finishes and a janitor
// deletes it. The tracking finalizer keeps it until the next controller
// has recorded its outcome: one Pod, one run, the right result.
func TestPodGoneBeforeRecordedIsNotRunAgain(t *testing.T) {
	h := newHarness(t)
	h.createAt("janitor", cnatv1beta1.AtSpec{Schedule: schedule(start), Command: "echo once", BackoffLimit: ptr.To[int32](2)})

	var creates atomic.Int32
	countCreates := interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		creates.Add(1)
		return c.Create(ctx, obj, opts...)
	}}
	// The firing writes only the Pod; the controller is killed before the
	// Pod's watch event brings the status write.
	_, err := h.newReconciler(countCreates).Reconcile(h.ctx, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: h.ns, Name: "janitor"}})
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(h.at("janitor").Status.Attempts).To(BeZero())
	name := h.podName("janitor", 1)
	h.finishPod(name, 0)
	h.g.Expect(apiClient.Delete(h.ctx, h.pod(name))).To(Succeed(), "the janitor")
	h.g.Expect(h.pod(name).DeletionTimestamp).NotTo(BeNil(), "held by the tracking finalizer")

	successor := h.newReconciler(countCreates)
	for range 3 {
		h.clock.Step(time.Minute)
		_, err := successor.Reconcile(h.ctx, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: h.ns, Name: "janitor"}})
		h.g.Expect(err).NotTo(HaveOccurred())
	}
	at := h.at("janitor")
	h.g.Expect(at.Status.Phase).To(Equal(cnatv1beta1.PhaseSucceeded))
	h.g.Expect(at.Status.Attempts).To(Equal(int32(1)))
	h.g.Expect(creates.Load()).To(Equal(int32(1)), "one Pod created in all")
	h.g.Expect(h.pods("janitor")).To(BeEmpty(), "released once recorded, the Pod is gone")
}

// TestDeletedPodKilledIsNotRetried: a running Pod is deleted; the kubelet
// kills it and it ends Failed. It was deleted before it finished: the At
// fails with PodDeleted, with retries left, and nothing runs again.
func TestDeletedPodKilledIsNotRetried(t *testing.T) {
	h := newHarness(t)
	name := h.runningAt("killed")

	h.g.Expect(apiClient.Delete(h.ctx, h.pod(name))).To(Succeed())
	pod := h.pod(name)
	// The kubelet's kill lands after the deletion was requested.
	pod.Status = testenv.TerminatedStatus(pod, 137, pod.DeletionTimestamp.Add(time.Second))
	h.g.Expect(apiClient.Status().Update(h.ctx, pod)).To(Succeed())

	h.reconcile("killed")
	h.removeStoppedPod(name)
	h.clock.Step(time.Hour)
	h.reconcile("killed")
	at := h.at("killed")
	h.g.Expect(at.Status.Phase).To(Equal(cnatv1beta1.PhaseFailed))
	h.g.Expect(at.Status.Reason).To(Equal(cnatv1beta1.ReasonPodDeleted))
	h.g.Expect(h.pods("killed")).To(BeEmpty(), "no retry; the killed Pod released and gone")
}

// TestForeignPodIsReported: a Pod that is not the At's has the name of the
// At's first Pod. The At says so and the Pod is left exactly as it was.
func TestForeignPodIsReported(t *testing.T) {
	h := newHarness(t)
	h.createAt("squatted", cnatv1beta1.AtSpec{Schedule: schedule(start.Add(time.Minute)), Command: "echo mine"})
	h.reconcile("squatted")
	name := h.podName("squatted", 1)
	foreign := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns, Labels: map[string]string{"app": "theirs"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "alpine", Command: []string{"echo", "theirs"}}}},
	}
	h.g.Expect(apiClient.Create(h.ctx, foreign)).To(Succeed())
	before := h.pod(name)

	h.clock.Step(time.Minute)
	_, err := h.r.Reconcile(h.ctx, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: h.ns, Name: "squatted"}})
	h.g.Expect(errors.Unwrap(err)).To(Satisfy(apierrors.IsAlreadyExists), "retried with backoff: %v", err)
	at := h.at("squatted")
	h.g.Expect(at.Status.Reason).To(Equal(cnatv1beta1.ReasonPodNameTaken))
	h.g.Expect(at.Status.Message).To(ContainSubstring(name))
	h.g.Expect(at.Status.Attempts).To(BeZero(), "nothing started")
	h.g.Expect(h.pod(name).ResourceVersion).To(Equal(before.ResourceVersion), "the foreign Pod is untouched")
	h.g.Expect(h.events()).To(ContainElement(ContainSubstring("Warning PodNameTaken")))
}

// TestPodPendingSaysWhy: while the Pod cannot start, the At says which Pod
// and why.
func TestPodPendingSaysWhy(t *testing.T) {
	h := newHarness(t)
	h.createAt("no-image", cnatv1beta1.AtSpec{Schedule: schedule(start), Command: "echo"})
	h.reconcile("no-image")
	pod := h.pod(h.podName("no-image", 1))
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
		Name: pod.Spec.Containers[0].Name, Image: pod.Spec.Containers[0].Image,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "ErrImageNeverPull", Message: `Container image "busybox:1.37" is not present with pull policy of Never`,
		}},
	}}}
	h.g.Expect(apiClient.Status().Update(h.ctx, pod)).To(Succeed())
	h.reconcile("no-image")
	at := h.at("no-image")
	h.g.Expect(at.Status.Phase).To(Equal(cnatv1beta1.PhaseRunning))
	h.g.Expect(at.Status.Reason).To(Equal(cnatv1beta1.ReasonPodPending))
	h.g.Expect(at.Status.Message).To(And(ContainSubstring(pod.Name), ContainSubstring("ErrImageNeverPull"), ContainSubstring("pull policy of Never")))
}

// TestOutcomeAnnouncedOnceWhenTTLDeleteFails: the TTL delete fails once;
// the Events and the runs counter still count the outcome once.
func TestOutcomeAnnouncedOnceWhenTTLDeleteFails(t *testing.T) {
	h := newHarness(t)
	registry := prometheus.NewRegistry()
	var failed atomic.Bool
	r := h.newReconciler(interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
		if failed.CompareAndSwap(false, true) {
			return apierrors.NewServiceUnavailable("etcd is busy")
		}
		return c.Delete(ctx, obj, opts...)
	}})
	r.Metrics = NewMetrics(registry)
	h.createAt("brief", cnatv1beta1.AtSpec{Schedule: schedule(start), Command: "echo", TTLSecondsAfterFinished: ptr.To[int32](0)})
	req := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: h.ns, Name: "brief"}}
	_, err := r.Reconcile(h.ctx, req)
	h.g.Expect(err).NotTo(HaveOccurred())
	h.finishPod(h.podName("brief", 1), 0)
	_, err = r.Reconcile(h.ctx, req)
	h.g.Expect(err).To(MatchError(ContainSubstring("etcd is busy")))
	_, err = r.Reconcile(h.ctx, req)
	h.g.Expect(err).NotTo(HaveOccurred())

	h.g.Expect(apiClient.Get(h.ctx, req.NamespacedName, &cnatv1beta1.At{})).To(Satisfy(apierrors.IsNotFound), "deleted on the second try")
	var succeeded []string
	h.g.Expect(h.events()).To(ContainElement("Normal Succeeded The command exited 0", &succeeded))
	h.g.Expect(succeeded).To(HaveLen(1), "one Succeeded Event")
	h.g.Expect(testutil.ToFloat64(r.Metrics.Runs.WithLabelValues("Succeeded"))).To(Equal(1.0))
}

// TestLatenessObservedOnceThePodExists: a Pod the API server refuses is
// not a start; the lateness is observed when the Pod is created.
func TestLatenessObservedOnceThePodExists(t *testing.T) {
	h := newHarness(t)
	var refused atomic.Bool
	r := h.newReconciler(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if refused.CompareAndSwap(false, true) {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, obj.GetName(), errors.New("exceeded quota"))
		}
		return c.Create(ctx, obj, opts...)
	}})
	r.Metrics = NewMetrics(prometheus.NewRegistry())
	h.createAt("quota", cnatv1beta1.AtSpec{Schedule: schedule(start), Command: "echo"})
	req := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: h.ns, Name: "quota"}}

	_, err := r.Reconcile(h.ctx, req)
	h.g.Expect(errors.Unwrap(err)).To(Satisfy(apierrors.IsForbidden), "wrapping: %v", err)
	h.g.Expect(h.at("quota").Status.Reason).To(Equal(cnatv1beta1.ReasonPodForbidden))
	h.g.Expect(histogramCount(h.g, r.Metrics.FiringLateness)).To(BeZero(), "no Pod, no start")

	h.clock.Step(2 * time.Second)
	_, err = r.Reconcile(h.ctx, req)
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(histogramCount(h.g, r.Metrics.FiringLateness)).To(Equal(uint64(1)))
	_, err = r.Reconcile(h.ctx, req) // the Pod's watch event
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(h.at("quota").Status.Phase).To(Equal(cnatv1beta1.PhaseRunning))
}

// TestDeletedAtReleasesPodsTheCacheDoesNotShow: the At is deleted while a
// Pod of its still carries the tracking finalizer but is not in the
// controller's cache — here labelled released by someone, where no policy
// stops it, which takes it out of the cache's selection. The reconcile of
// the deletion reads the At's Pods from the API server, released or not,
// and removes the finalizer: no Pod, and so no namespace, stays
// Terminating.
func TestDeletedAtReleasesPodsTheCacheDoesNotShow(t *testing.T) {
	h := newHarness(t)
	// The cache's selection: no released Pod.
	h.r = h.newReconciler(interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if err := c.List(ctx, list, opts...); err != nil {
			return err
		}
		if pods, ok := list.(*corev1.PodList); ok {
			pods.Items = slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool { return p.Labels[cnatv1beta1.LabelReleased] != "" })
		}
		return nil
	}})
	podName := h.runningAt("gone")
	pod := h.pod(podName)
	h.g.Expect(apiClient.Patch(h.ctx, pod, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+cnatv1beta1.LabelReleased+`":"true"}}}`)))).To(Succeed())
	h.g.Expect(apiClient.Delete(h.ctx, h.at("gone"))).To(Succeed())
	// The garbage collector's part (envtest runs none): the Pod deleted.
	h.g.Expect(apiClient.Delete(h.ctx, pod)).To(Succeed())

	h.reconcile("gone")
	h.g.Expect(h.pod(podName).Finalizers).NotTo(ContainElement(cnatv1beta1.TrackingFinalizer), "nothing keeps the Pod once its kubelet is done")
}
