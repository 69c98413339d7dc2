package cluster

import corev1 "k8s.io/api/core/v1"

// The local cluster's simulated (kwok) nodes carry the label and the
// NoSchedule taint SimulatedLabel=true (hack/cluster-up.sh); their simulated
// kubelet (hack/kwok/stages.yaml) imitates a Pod's command as its
// annotations say. Their keys are outside cnat's own prefix
// (cnatv1beta1.KeyPrefix), which an At's template may not use.
const (
	SimulatedLabel = "cnat.programming-kubernetes.info/simulated"
	// AnnotationDuration is how long the Pod runs, as a Go duration.
	AnnotationDuration = "simulate.cnat.programming-kubernetes.info/duration"
	// AnnotationExitCode is the exit code it ends with.
	AnnotationExitCode = "simulate.cnat.programming-kubernetes.info/exit-code"
	// AnnotationStartDelay keeps it Pending on its node that long before
	// its containers start.
	AnnotationStartDelay = "simulate.cnat.programming-kubernetes.info/start-delay"
)

// Simulated places a Pod spec on the simulated nodes: their label
// selected, their taint tolerated.
func Simulated(spec corev1.PodSpec) corev1.PodSpec {
	spec.NodeSelector = map[string]string{SimulatedLabel: "true"}
	spec.Tolerations = append(spec.Tolerations, SimulatedToleration)
	return spec
}

// SimulatedToleration tolerates the simulated nodes' taint.
var SimulatedToleration = corev1.Toleration{
	Key: SimulatedLabel, Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule,
}

// SimulatedPodSpec is a Pod spec for the simulated nodes: one busybox
// container called name running command, never restarted.
func SimulatedPodSpec(name string, command ...string) corev1.PodSpec {
	return Simulated(corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{{Name: name, Image: "busybox:1.37", Command: command}},
	})
}
