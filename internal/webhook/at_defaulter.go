package webhook

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// The rules are spelled out in full (with the scope the API server would
// otherwise default) so that what is applied equals what is stored: an
// atomic list that differs only by a default makes `kubectl apply
// --server-side` after `kubectl apply` conflict.
//
// The match condition has the API server call the webhook only when the
// At may have something to default: it leaves out an At that is sure to
// have nothing (no template, or one whose restartPolicy is a non-empty
// string and whose containers and init containers are all objects with a
// non-empty string image), which saves a webhook round trip for most Ats
// written in full (GitOps, CI). Default then changes nothing, and
// controller-runtime answers an object Default left unchanged with no patch
// at all (TestDefaulterPatchesNothingThen); an At that does not decode is
// passed on unchanged either way (skipUndecodable).
// The condition sees the object before the schema is checked, so every
// value is tested for its type before it is read, and && and || absorb
// what they need not evaluate: a value of any type makes it true or false,
// never an error, which failurePolicy Fail would turn into a refusal
// without the field named (TestHostileAndCarelessInput, "nothing to
// default"). Anything unexpected calls the webhook, as before.
//
// +kubebuilder:webhook:path=/mutate-cnat-programming-kubernetes-info-v1beta1-at,mutating=true,failurePolicy=fail,sideEffects=None,groups=cnat.programming-kubernetes.info,resources=ats,verbs=create;update,versions=v1beta1,name=mat-v1beta1.cnat.programming-kubernetes.info,admissionReviewVersions=v1,matchPolicy=Equivalent,timeoutSeconds=5,patch=`{"rules":[{"apiGroups":["cnat.programming-kubernetes.info"],"apiVersions":["v1beta1"],"operations":["CREATE","UPDATE"],"resources":["ats"],"scope":"Namespaced"}],"matchConditions":[{"name":"may-have-something-to-default","expression":"!(type(object) == map && has(object.spec) && type(object.spec) == map && (!has(object.spec.template) || type(object.spec.template) == null_type || (type(object.spec.template) == map && has(object.spec.template.spec) && type(object.spec.template.spec) == map && has(object.spec.template.spec.restartPolicy) && type(object.spec.template.spec.restartPolicy) == string && object.spec.template.spec.restartPolicy != '' && has(object.spec.template.spec.containers) && type(object.spec.template.spec.containers) == list && object.spec.template.spec.containers.all(c, type(c) == map && has(c.image) && type(c.image) == string && c.image != '') && (!has(object.spec.template.spec.initContainers) || type(object.spec.template.spec.initContainers) == null_type || (type(object.spec.template.spec.initContainers) == list && object.spec.template.spec.initContainers.all(c, type(c) == map && has(c.image) && type(c.image) == string && c.image != ''))))))"}]}`

// AtDefaulter writes into an At's template what the controller would
// otherwise decide when it runs it, so the stored object says what will
// run: restartPolicy Never and the default image for containers that name
// none. An At without a template is left as it is: its Pod is the
// controller's default, documented on spec.command.
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
