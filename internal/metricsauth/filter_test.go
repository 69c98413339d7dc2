package metricsauth

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/programming-kubernetes/cnat/test/testenv"
)

var cfg *rest.Config

func TestMain(m *testing.M) {
	env := &envtest.Environment{BinaryAssetsDirectory: testenv.BinaryAssetsDirectory()}
	var err error
	if cfg, err = env.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "starting envtest (kube-apiserver and etcd from %s; run make tools): %v\n", env.BinaryAssetsDirectory, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
	}
	os.Exit(code)
}

// TestOnlyWhoMayGetMetricsGetsThem: against a real API server (RBAC and
// service account tokens), a scraper whose ServiceAccount is bound to a role
// granting get on /metrics reads them; no token, an unknown token, another
// ServiceAccount, another path or another verb are refused with 401 or 403;
// and a scraper's repeated requests are answered without asking again.
func TestOnlyWhoMayGetMetricsGetsThem(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	admin := kubernetes.NewForConfigOrDie(cfg)
	const ns = "monitoring"
	_, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	token := map[string]string{}
	for _, sa := range []string{"scraper", "stranger"} {
		_, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		token[sa] = tr.Status.Token
	}
	_, err = admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "scraper"}},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	// The filter's own client counts the reviews it sends.
	var reviews atomic.Int32
	counted := rest.CopyConfig(cfg)
	counted.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			if strings.HasSuffix(r.URL.Path, "/tokenreviews") || strings.HasSuffix(r.URL.Path, "/subjectaccessreviews") {
				reviews.Add(1)
			}
			return rt.RoundTrip(r)
		})
	})
	httpClient, err := rest.HTTPClientFor(counted)
	g.Expect(err).NotTo(HaveOccurred())
	filter, err := Provider(counted, httpClient)
	g.Expect(err).NotTo(HaveOccurred())
	handler, err := filter(logr.Discard(), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "cnat_runs_total 1\n")
	}))
	g.Expect(err).NotTo(HaveOccurred())
	server := httptest.NewServer(handler)
	defer server.Close()

	send := func(method, path, auth string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, method, server.URL+path, nil)
		g.Expect(err).NotTo(HaveOccurred())
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := server.Client().Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		g.Expect(err).NotTo(HaveOccurred())
		return resp.StatusCode, string(body)
	}
	// The binding reaches the API server's RBAC cache shortly after its
	// creation; a denial is reused for 30 s, so wait for it with another
	// filter's worth of patience: ask the API server directly first.
	g.Eventually(func() bool {
		return canGetMetrics(ctx, admin, ns, "scraper")
	}).WithTimeout(30 * time.Second).Should(BeTrue())

	code, body := send(http.MethodGet, "/metrics", "Bearer "+token["scraper"])
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(body).To(Equal("cnat_runs_total 1\n"))
	g.Expect(reviews.Load()).To(BeEquivalentTo(2), "one TokenReview, one SubjectAccessReview")
	code, _ = send(http.MethodGet, "/metrics", "bearer  "+token["scraper"])
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(reviews.Load()).To(BeEquivalentTo(2), "both answers reused")

	for _, c := range []struct {
		what, method, path, auth string
		code                     int
	}{
		{"no token", http.MethodGet, "/metrics", "", http.StatusUnauthorized},
		{"not a bearer token", http.MethodGet, "/metrics", "Basic " + token["scraper"], http.StatusUnauthorized},
		{"an unknown token", http.MethodGet, "/metrics", "Bearer not-a-token", http.StatusUnauthorized},
		{"a ServiceAccount without the role", http.MethodGet, "/metrics", "Bearer " + token["stranger"], http.StatusForbidden},
		{"another path", http.MethodGet, "/debug", "Bearer " + token["scraper"], http.StatusForbidden},
		{"another verb", http.MethodPost, "/metrics", "Bearer " + token["scraper"], http.StatusForbidden},
	} {
		code, body := send(c.method, c.path, c.auth)
		g.Expect(code).To(Equal(c.code), c.what)
		g.Expect(body).NotTo(ContainSubstring("cnat_runs_total"), c.what)
	}
}

// canGetMetrics asks the API server whether the ServiceAccount may get
// /metrics.
func canGetMetrics(ctx context.Context, admin kubernetes.Interface, ns, sa string) bool {
	user := "system:serviceaccount:" + ns + ":" + sa
	review, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: []string{"system:serviceaccounts"},
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}},
	}, metav1.CreateOptions{})
	return err == nil && review.Status.Allowed
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
