package controller

import (
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// CacheOptions keeps in the manager's cache only what the controller reads,
// so that its memory follows the number of Ats, and as little of each as
// it can.
//
// Pods: only those cnat created (they carry the At label) and has not
// released yet (no released label: a released Pod's outcome is in its At's
// status, or its At is gone; the API server's watch reports it deleted from
// the selection when release labels it), and of each only what a reconcile
// reads (trimPod). A Pod stays in the cluster after its At finished, and
// thousands of settled Ats would otherwise keep thousands of Pods in the
// controller's memory. A reconcile that needs a Pod the cache does not show
// lists the At's Pods from the API server (lifecycle's ConfirmPods), which
// sees released Pods too. Ats are not in it: the controller keeps them in a
// store of its own (atcache.Store).
func CacheOptions() cache.Options {
	ownedByCnat, err := labels.NewRequirement(cnatv1beta1.LabelAt, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant, valid label key
	}
	notReleased, err := labels.NewRequirement(cnatv1beta1.LabelReleased, selection.DoesNotExist, nil)
	if err != nil {
		panic(err) // a constant, valid label key
	}
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Pod{}: {Label: labels.NewSelector().Add(*ownedByCnat, *notReleased), Transform: trimPod},
	}}
}

// ClientOptions has the manager's client read Ats from the API server, never
// from an informer: the store of Ats is the controller's cache of them, and
// an At read through the client must not start a second one that keeps
// every At whole.
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&cnatv1beta1.At{}}}}
}

// trimPod keeps of a Pod what the controller reads (lifecycle's reading of
// a Pod, the history of it the Pod watch keeps, the release of its
// finalizer): its metadata without managed fields and with only cnat's
// annotations; of its spec, the node and the name of the first container,
// where the command runs; of its conditions, the two readPod reads (a
// disruption, the scheduler's refusal); and its status without what
// identifies images, containers and addresses. The rest of the spec — the
// containers, volumes, the template the user wrote — and the routine
// conditions of a Pod that ran are most of its size, and a burst of Ats due
// together has thousands of Pods in the cache until they are released.
func trimPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	pod.ManagedFields = nil
	maps.DeleteFunc(pod.Annotations, func(k, _ string) bool {
		return !strings.HasPrefix(k, cnatv1beta1.GroupVersion.Group+"/")
	})
	var containers []corev1.Container
	if len(pod.Spec.Containers) > 0 {
		containers = []corev1.Container{{Name: pod.Spec.Containers[0].Name}}
	}
	pod.Spec = corev1.PodSpec{NodeName: pod.Spec.NodeName, Containers: containers}
	var conditions []corev1.PodCondition
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget || c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			conditions = append(conditions, c)
		}
	}
	pod.Status.Conditions = conditions
	pod.Status.HostIPs, pod.Status.PodIPs, pod.Status.HostIP, pod.Status.PodIP = nil, nil, "", ""
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for i := range statuses {
			cs := &statuses[i]
			cs.Image, cs.ImageID, cs.ContainerID = "", "", ""
			cs.VolumeMounts, cs.Resources, cs.AllocatedResources, cs.AllocatedResourcesStatus, cs.User = nil, nil, nil, nil, nil
		}
	}
	return pod, nil
}
