// +kubebuilder:object:generate=true
// +kubebuilder:ac:generate=false
// +groupName=cnat.programming-kubernetes.info
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the objects in this package.
	GroupVersion = schema.GroupVersion{Group: "cnat.programming-kubernetes.info", Version: "v1alpha1"}

	// SchemeGroupVersion is GroupVersion under the name generated code
	// expects.
	SchemeGroupVersion = GroupVersion

	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
