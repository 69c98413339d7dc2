package controller

import (
	"context"
	"encoding/json"
	"fmt"

	"golang.org/x/sync/singleflight"
	authorizationv1 "k8s.io/api/authorization/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
	allowed, err := r.reviews.allowed(ctx, r.Client, review)
	if err != nil {
		err = fmt.Errorf("asking whether user %q, who last set the At's spec, may create Pods in namespace %q: %w", user.Username, at.Namespace, err)
		return &lifecycle.Refusal{Reason: cnatv1beta1.ReasonPodCreateFailed, Err: err}
	}
	if allowed {
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

// accessReviews asks identical SubjectAccessReviews one at a time, a check
// asked while the same is in flight taking its answer: Ats of one author due
// together cost one review per round trip, and no answer outlives its request.
type accessReviews struct{ flight singleflight.Group }

func (a *accessReviews) allowed(ctx context.Context, c client.Client, review *authorizationv1.SubjectAccessReview) (bool, error) {
	key, err := json.Marshal(review.Spec)
	if err != nil {
		return false, err
	}
	v, err, _ := a.flight.Do(string(key), func() (any, error) {
		if err := c.Create(ctx, review); err != nil {
			return false, err
		}
		return review.Status.Allowed, nil
	})
	if err != nil {
		return false, err
	}
	return v.(bool), nil
}
