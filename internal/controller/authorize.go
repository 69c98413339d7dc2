package controller

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/author"
	"github.com/programming-kubernetes/cnat/internal/lifecycle"
)

// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// authorizeAuthor asks the API server, by a SubjectAccessReview, whether the
// At's author (the user who last set its spec) may still create Pods in its
// namespace, just before the controller creates one with its own rights: a
// right revoked after the At was admitted stops its run. A refusal is
// retried like any other, so a right restored before the deadline resumes
// it. An At without an author (stored before authors were recorded) is not
// asked about: its admission checked whoever created it.
func (r *AtReconciler) authorizeAuthor(ctx context.Context, at *cnatv1beta1.At) *lifecycle.Refusal {
	if !r.PodCreateGuard {
		return nil
	}
	user, ok, err := author.Of(at)
	switch {
	case !ok:
		return nil
	case err != nil:
		return &lifecycle.Refusal{
			Reason:  cnatv1beta1.ReasonAuthorForbidden,
			Message: fmt.Sprintf("The At's author cannot be read, so no Pod is created on its behalf: %v", err),
			Err:     err,
		}
	}
	extra := make(map[string]authorizationv1.ExtraValue, len(user.Extra))
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   user.Username,
		UID:    user.UID,
		Groups: user.Groups,
		Extra:  extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: at.Namespace,
			Verb:      "create",
			Resource:  "pods",
		},
	}}
	ctrl.LoggerFrom(ctx).V(1).Info("Asking whether the At's author may create Pods", "user", user.Username)
	if err := r.Client.Create(ctx, review); err != nil {
		err = fmt.Errorf("asking whether user %q, who last set the At's spec, may create Pods in namespace %q: %w", user.Username, at.Namespace, err)
		return &lifecycle.Refusal{Reason: cnatv1beta1.ReasonPodCreateFailed, Err: err}
	}
	if review.Status.Allowed {
		return nil
	}
	err = fmt.Errorf("user %q, who last set the At's spec, may not create Pods in namespace %q", user.Username, at.Namespace)
	return &lifecycle.Refusal{
		Reason: cnatv1beta1.ReasonAuthorForbidden,
		Message: fmt.Sprintf("User %q, who last set the At's spec, may not create Pods in namespace %q now, so cnat creates none on their behalf; "+
			"asked again until the starting deadline: grant the right back, or have a user who has it set the spec", user.Username, at.Namespace),
		Err: err,
	}
}
