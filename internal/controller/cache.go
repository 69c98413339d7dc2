package controller

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// CacheOptions limits the manager's Pod cache to the Pods cnat created (they
// carry the At label), so the controller's memory follows the number of
// Ats, not the number of Pods in the cluster, and keeps them without their
// managed fields, which nothing of the controller reads (the Ats keep
// theirs: the status writer reads what its field manager owns).
func CacheOptions() cache.Options {
	ownedByCnat, err := labels.NewRequirement(cnatv1beta1.LabelAt, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant, valid label key
	}
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Pod{}: {Label: labels.NewSelector().Add(*ownedByCnat), Transform: cache.TransformStripManagedFields()},
	}}
}
