package webhook

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// guardPodCreate is the confused-deputy guard: the controller creates Pods with
// its own rights, so an At from a user who may not create Pods in its namespace
// (a SubjectAccessReview) is refused. An "allowed" is reused for AllowedFor.
func (v *AtValidator) guardPodCreate(ctx context.Context, at *cnatv1beta1.At) error {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("reading the admission request: %w", err))
	}
	user := req.UserInfo
	extra := make(map[string]authorizationv1.ExtraValue, len(user.Extra))
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	namespace := req.Namespace
	if namespace == "" {
		namespace = at.Namespace
	}
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   user.Username,
		Groups: user.Groups,
		UID:    user.UID,
		Extra:  extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: namespace,
			Verb:      "create",
			Resource:  "pods",
		},
	}}
	key := decisionKey(user, namespace)
	if v.PodCreateDecisions != nil {
		if _, allowed := v.PodCreateDecisions.Get(key); allowed {
			return nil
		}
	}
	if err := v.Client.Create(ctx, review); err != nil {
		return apierrors.NewInternalError(fmt.Errorf("asking whether %s may create Pods in namespace %s: %w", user.Username, namespace, err))
	}
	if review.Status.Allowed {
		if v.PodCreateDecisions != nil {
			v.PodCreateDecisions.Add(key, struct{}{}, AllowedFor)
		}
		return nil
	}
	return apierrors.NewForbidden(cnatv1beta1.GroupVersion.WithResource("ats").GroupResource(), at.Name, fmt.Errorf(
		"user %q may not create Pods in namespace %q, and an At runs its command in a Pod that cnat creates on the user's behalf: ask for the right to create Pods there",
		user.Username, namespace))
}

// AllowedFor is how long the guard reuses an "allowed" for a user and
// namespace: a revoked right holds on new Ats within it. Refusals are never
// reused (the API server's webhook authorizer reuses an "allowed" for 5 min).
const AllowedFor = 10 * time.Second

// decisionKey identifies what a SubjectAccessReview of the guard asks: all the
// authorizers may read of the user, in the order given, and the namespace.
func decisionKey(user authenticationv1.UserInfo, namespace string) string {
	var b strings.Builder
	field := func(s string) { b.WriteString(strconv.Quote(s)); b.WriteByte(' ') }
	field(namespace)
	field(user.Username)
	field(user.UID)
	b.WriteString("groups ")
	for _, g := range user.Groups {
		field(g)
	}
	for _, k := range slices.Sorted(maps.Keys(user.Extra)) {
		b.WriteString("extra ")
		field(k)
		for _, v := range user.Extra[k] {
			field(v)
		}
	}
	return b.String()
}
