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

// CacheOptions keeps in the manager's cache only the Pods cnat made and has
// not released, trimmed (trimPod), so its memory follows the Ats that run,
// not the Pods settled Ats leave behind (docs/architecture.md, cache.go).
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

// ClientOptions has the manager's client read Ats from the API server: an
// informer would keep every At whole beside the At cache.
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&cnatv1beta1.At{}}}}
}

// trimPod keeps of a Pod what the controller reads: metadata without managed
// fields and foreign annotations, the node and first container's name, the
// two conditions readPod reads, the status without image, container and
// address identities. The rest is most of a Pod's size.
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
