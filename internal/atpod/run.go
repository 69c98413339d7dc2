package atpod

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// RunOf returns the attempt pod runs for at, or why it is not at's run: its
// controller reference, claim labels and name, which the Pod-claim policy
// lets only the controller make. Every reader of cnat's Pods asks this alone.
func RunOf(pod *corev1.Pod, at *cnatv1beta1.At) (int32, error) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return 0, fmt.Errorf("it has no controller")
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.Group != cnatv1beta1.GroupVersion.Group || ref.Kind != "At" || ref.UID != at.UID {
		return 0, fmt.Errorf("its controller is %s %s (%s, uid %s), not this At", ref.Kind, ref.Name, ref.APIVersion, ref.UID)
	}
	if pod.Labels[cnatv1beta1.LabelAt] != at.Name || pod.Labels[cnatv1beta1.LabelAtUID] != string(at.UID) {
		return 0, fmt.Errorf("its labels %s and %s do not name this At", cnatv1beta1.LabelAt, cnatv1beta1.LabelAtUID)
	}
	n, err := strconv.ParseInt(pod.Labels[cnatv1beta1.LabelAttempt], 10, 32)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("its label %s is not an attempt number", cnatv1beta1.LabelAttempt)
	}
	attempt := int32(n)
	if pod.Name != PodName(at, attempt) {
		return 0, fmt.Errorf("its name is not %s, the name of attempt %d", PodName(at, attempt), attempt)
	}
	return attempt, nil
}
