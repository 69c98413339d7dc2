package controller

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
// Pods: only those cnat created (they carry the At label), without their
// managed fields, which nothing of the controller reads. Ats are not in it:
// the controller keeps them in a store of its own (atStore).
func CacheOptions() cache.Options {
	ownedByCnat, err := labels.NewRequirement(cnatv1beta1.LabelAt, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant, valid label key
	}
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Pod{}: {Label: labels.NewSelector().Add(*ownedByCnat), Transform: cache.TransformStripManagedFields()},
	}}
}

// ClientOptions has the manager's client read Ats from the API server, never
// from an informer: the store of Ats is the controller's cache of them, and
// an At read through the client must not start a second one that keeps
// every At whole.
func ClientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&cnatv1beta1.At{}}}}
}

// trimAt drops from an At the store keeps whole what the controller never
// reads: the managed fields of every manager but the status writer's (it
// compares its apply with what that manager owns) and kubectl's
// last-applied-configuration annotation.
func trimAt(obj any) (any, error) {
	at, ok := obj.(*cnatv1beta1.At)
	if !ok {
		return obj, nil
	}
	var own []metav1.ManagedFieldsEntry
	for _, entry := range at.ManagedFields {
		if entry.Manager == cnatv1beta1.StatusFieldManager {
			own = append(own, entry)
		}
	}
	at.ManagedFields = own
	delete(at.Annotations, corev1.LastAppliedConfigAnnotation)
	return at, nil
}
