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

// guardPodCreate is the confused-deputy guard. The controller creates an
// At's Pod with its own rights; without this check, a user allowed to
// create Ats but not Pods would get a Pod through cnat. It asks the API
// server, by a SubjectAccessReview for the requesting user, groups and
// extra attributes, whether that user may create Pods in the At's
// namespace, and refuses the At if not. An answer "allowed" is reused for
// the same user in the same namespace for AllowedFor (PodCreateDecisions):
// a GitOps tool applying a thousand Ats asks once, not a thousand times.
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

// AllowedFor is how long the confused-deputy guard takes a user's right to
// create Pods in a namespace as given once the API server confirmed it: a
// right revoked is enforced on new Ats within this time. Refusals are never
// reused, so a right granted takes effect at once. The API server's own
// webhook authorizer reuses an "allowed" for 5 minutes by default
// (--authorization-webhook-cache-authorized-ttl).
const AllowedFor = 10 * time.Second

// decisionKey identifies what a SubjectAccessReview of the guard asks:
// everything of the user the authorizers may read (name, UID, groups, extra)
// and the namespace. Groups and extra values are taken in their order, as
// the API server passes them to the authorizers.
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
