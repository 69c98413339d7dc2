// Package metricsauth guards the controller's metrics endpoint with a
// TokenReview and a SubjectAccessReview, as controller-runtime's
// filters.WithAuthenticationAndAuthorization does, on client-go alone (why:
// docs/architecture.md, "The binary").
package metricsauth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// How long answers are reused, as controller-runtime's filter does.
const (
	tokenTTL  = time.Minute
	allowTTL  = 5 * time.Minute
	denyTTL   = 30 * time.Second
	cacheSize = 1024
	// reviewTimeout bounds each review: a scrape is tried again anyway.
	reviewTimeout = 10 * time.Second
)

// Provider is a metricsserver.Options.FilterProvider.
func Provider(config *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	clients, err := kubernetes.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, err
	}
	return New(clients), nil
}

// New is the filter, asking the API server through clients.
func New(clients kubernetes.Interface) metricsserver.Filter {
	g := &guard{clients: clients, tokens: cache.NewLRUExpireCache(cacheSize), decisions: cache.NewLRUExpireCache(cacheSize)}
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			user, err := g.authenticate(req)
			if err != nil {
				log.Error(err, "Authentication failed")
				http.Error(w, "Authentication failed", http.StatusInternalServerError)
				return
			}
			if user == nil {
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
				return
			}
			allowed, err := g.authorize(req, user)
			if err != nil {
				msg := fmt.Sprintf("Authorization for user %s failed", user.Username)
				log.Error(err, msg)
				http.Error(w, msg, http.StatusInternalServerError)
				return
			}
			if !allowed {
				http.Error(w, fmt.Sprintf("Authorization denied for user %s", user.Username), http.StatusForbidden)
				return
			}
			next.ServeHTTP(w, req)
		}), nil
	}
}

type guard struct {
	clients   kubernetes.Interface
	tokens    *cache.LRUExpireCache // SHA-256 of a token → *authenticationv1.UserInfo (nil: refused)
	decisions *cache.LRUExpireCache // the review's spec, as JSON → allowed
}

// authenticate is the user the request's bearer token belongs to, or nil
// when it has none or the API server does not know it.
func (g *guard) authenticate(req *http.Request) (*authenticationv1.UserInfo, error) {
	// As the API server reads it: "Bearer", in any case, and the token.
	parts := strings.Fields(req.Header.Get("Authorization"))
	if len(parts) != 2 || !strings.EqualFold(parts[0], "bearer") {
		return nil, nil
	}
	token := parts[1]
	key := sha256.Sum256([]byte(token))
	if user, ok := g.tokens.Get(key); ok {
		return user.(*authenticationv1.UserInfo), nil
	}
	ctx, cancel := context.WithTimeout(req.Context(), reviewTimeout)
	defer cancel()
	review, err := g.clients.AuthenticationV1().TokenReviews().Create(ctx,
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}},
		metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	var user *authenticationv1.UserInfo
	if review.Status.Authenticated {
		user = &review.Status.User
	}
	g.tokens.Add(key, user, tokenTTL)
	return user, nil
}

// authorize asks whether user may send the request's method (as a verb,
// lower case) to its path.
func (g *guard) authorize(req *http.Request, user *authenticationv1.UserInfo) (bool, error) {
	spec := authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups,
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: req.URL.Path, Verb: strings.ToLower(req.Method)},
	}
	for k, v := range user.Extra {
		if spec.Extra == nil {
			spec.Extra = map[string]authorizationv1.ExtraValue{}
		}
		spec.Extra[k] = authorizationv1.ExtraValue(v)
	}
	// The whole question is the key: JSON writes a map's keys in order.
	key, err := json.Marshal(spec)
	if err != nil {
		return false, err
	}
	if allowed, ok := g.decisions.Get(string(key)); ok {
		return allowed.(bool), nil
	}
	ctx, cancel := context.WithTimeout(req.Context(), reviewTimeout)
	defer cancel()
	review, err := g.clients.AuthorizationV1().SubjectAccessReviews().Create(ctx,
		&authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	allowed := review.Status.Allowed && !review.Status.Denied
	ttl := denyTTL
	if allowed {
		ttl = allowTTL
	}
	g.decisions.Add(string(key), allowed, ttl)
	return allowed, nil
}
