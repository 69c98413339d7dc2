// +kubebuilder:object:generate=true
// +kubebuilder:ac:generate=false
// +groupName=cnat.programming-kubernetes.info
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the objects in this package.
	GroupVersion = schema.GroupVersion{Group: "cnat.programming-kubernetes.info", Version: "v1alpha1"}

	// SchemeGroupVersion is GroupVersion under the name generated code
	// expects.
	SchemeGroupVersion = GroupVersion

	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes registers At and AtList under GroupVersion.
func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &At{}, &AtList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
