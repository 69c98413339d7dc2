package webhook

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// The rules are spelled out in full, scope included (docs/architecture.md,
// "Admission"); called for every create and update: each records or keeps the
// author (recordAuthor).
//
// +kubebuilder:webhook:path=/mutate-cnat-programming-kubernetes-info-v1beta1-at,mutating=true,failurePolicy=fail,sideEffects=None,groups=cnat.programming-kubernetes.info,resources=ats,verbs=create;update,versions=v1beta1,name=mat-v1beta1.cnat.programming-kubernetes.info,admissionReviewVersions=v1,matchPolicy=Equivalent,reinvocationPolicy=IfNeeded,timeoutSeconds=5,patch=`{"rules":[{"apiGroups":["cnat.programming-kubernetes.info"],"apiVersions":["v1beta1"],"operations":["CREATE","UPDATE"],"resources":["ats"],"scope":"Namespaced"}]}`

// AtDefaulter writes into an At's template what the controller would decide
// when it runs it (restartPolicy Never, the default image), so the stored
// object says what will run. An At without a template is left as it is.
type AtDefaulter struct {
	// DefaultImage is the controller's --default-image.
	DefaultImage string
}

// Default fills in the template defaults.
func (d *AtDefaulter) Default(_ context.Context, at *cnatv1beta1.At) error {
	t := at.Spec.Template
	if t == nil || at.Status.Attempts > 0 {
		// Once fired, the template is what ran: it is not changed.
		return nil
	}
	if t.Spec.RestartPolicy == "" {
		t.Spec.RestartPolicy = corev1.RestartPolicyNever
	}
	for i := range t.Spec.InitContainers {
		if t.Spec.InitContainers[i].Image == "" {
			t.Spec.InitContainers[i].Image = d.DefaultImage
		}
	}
	for i := range t.Spec.Containers {
		if t.Spec.Containers[i].Image == "" {
			t.Spec.Containers[i].Image = d.DefaultImage
		}
	}
	return nil
}
