//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1alpha1 "github.com/programming-kubernetes/cnat/api/v1alpha1"
	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// controllerServiceAccount is the identity cnat's manifests give the
// controller (kustomize/base/rbac).
const controllerServiceAccount = "system:serviceaccount:cnat-system:cnat-controller"

// permissionsFile is the committed expectation of the controller's
// effective permissions; CNAT_E2E_WRITE_PERMISSIONS=1 rewrites it. The
// production overlay (CNAT_E2E_OVERLAY=production: make e2e-release) has
// its own: cert-manager provides the certificate, so it grants none of the
// rights of the built-in rotation.
func permissionsFile() string {
	if overlay := os.Getenv("CNAT_E2E_OVERLAY"); overlay != "" {
		return filepath.Join("testdata", "controller-permissions-"+overlay+".txt")
	}
	return filepath.Join("testdata", "controller-permissions.txt")
}

// impersonating is a client that acts as user with groups.
func impersonating(t *testing.T, user string, groups ...string) client.Client {
	cfg := rest.CopyConfig(restConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:authenticated")}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return c
}

// rulesOf are the rules a SelfSubjectRulesReview reports for c in
// namespace, one line per group, resource, name and verb.
func rulesOf(g Gomega, c client.Client, namespace string) []string {
	review := &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: namespace}}
	g.Expect(c.Create(context.Background(), review)).To(Succeed())
	g.Expect(review.Status.Incomplete).To(BeFalse(), "the authorizer lists every rule: %s", review.Status.EvaluationError)
	var lines []string
	for _, r := range review.Status.ResourceRules {
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{"*"}
		}
		for _, group := range r.APIGroups {
			for _, resource := range r.Resources {
				for _, name := range names {
					if group == "" && resource == "secrets" && strings.HasPrefix(name, "cnat-webhook-") && strings.HasSuffix(name, "-cert") {
						// The overlays name the certificate Secret differently
						// (kustomize renames it in the Role as well).
						name = "<webhook certificate Secret>"
					}
					for _, verb := range r.Verbs {
						if group == "" {
							group = "core"
						}
						lines = append(lines, fmt.Sprintf("%s %s %s %s", group, resource, name, verb))
					}
				}
			}
		}
	}
	slices.Sort(lines)
	return slices.Compact(lines)
}

// TestControllerPermissions compares what the controller's ServiceAccount
// may do, in its own namespace and in any other, with the committed
// expectation, leaving out what every authenticated user may do.
func TestControllerPermissions(t *testing.T) {
	g := NewWithT(t)
	ns := testNamespace(t)
	controller := impersonating(t, controllerServiceAccount, "system:serviceaccounts", "system:serviceaccounts:cnat-system")
	anyone := impersonating(t, "system:serviceaccount:"+ns+":nobody", "system:serviceaccounts", "system:serviceaccounts:"+ns)

	var got []string
	for _, scope := range []struct{ label, namespace string }{{"cnat-system", "cnat-system"}, {"any-namespace", ns}} {
		everyone := rulesOf(g, anyone, scope.namespace)
		for _, line := range rulesOf(g, controller, scope.namespace) {
			if !slices.Contains(everyone, line) {
				got = append(got, scope.label+" "+line)
			}
		}
	}
	text := "# What the controller's ServiceAccount may do beyond what every authenticated user may\n" +
		"# (e2e/security_test.go, TestControllerPermissions): scope group resource name verb.\n" +
		strings.Join(got, "\n") + "\n"
	if os.Getenv("CNAT_E2E_WRITE_PERMISSIONS") != "" {
		g.Expect(os.WriteFile(permissionsFile(), []byte(text), 0o644)).To(Succeed())
	}
	want, err := os.ReadFile(permissionsFile())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(text).To(Equal(string(want)), "the controller's permissions changed; review the difference and rewrite %s with CNAT_E2E_WRITE_PERMISSIONS=1", permissionsFile())
}

// TestStatusIsTheControllersAlone: a user who may update Ats, but not their
// status and not create Pods, cannot change the status of an At, whatever
// version or path the write takes.
func TestStatusIsTheControllersAlone(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := testNamespace(t)
	const user = "mallory"
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{cnatv1beta1.GroupVersion.Group}, Resources: []string{"ats"}, Verbs: []string{"get", "update"},
		}},
	}
	g.Expect(admin.Create(ctx, role)).To(Succeed())
	g.Expect(admin.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	})).To(Succeed())
	mallory := impersonating(t, user)

	at := &cnatv1beta1.At{
		ObjectMeta: metav1.ObjectMeta{Name: "settled", Namespace: ns},
		Spec:       cnatv1beta1.AtSpec{Schedule: "2099-01-01T00:00:00Z", Command: "echo"},
	}
	g.Expect(admin.Create(ctx, at)).To(Succeed())
	g.Eventually(phaseOf(ns, at.Name), time.Minute).Should(Equal(cnatv1beta1.PhasePending))
	before := get(g, ns, at.Name).Status

	read := func(gv string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(gv)
		u.SetKind("At")
		g.Expect(mallory.Get(ctx, client.ObjectKeyFromObject(at), u)).To(Succeed())
		return u
	}
	stored := func() cnatv1beta1.AtStatus { return get(g, ns, at.Name).Status }

	// Issue 9: five attempts, retrying, claimed in the annotation in which
	// the v1alpha1 form once carried the template. It is an ordinary
	// annotation now: the write is allowed (only the annotations change),
	// and nothing takes a status from it.
	u := read(cnatv1alpha1.GroupVersion.String())
	annotations := u.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations["cnat.programming-kubernetes.info/conversion-data"] = `{"status":{"phase":"Running","attempts":5,"reason":"Retrying"}}`
	u.SetAnnotations(annotations)
	g.Expect(mallory.Update(ctx, u)).To(Succeed())
	g.Expect(stored()).To(BeComparableTo(before))

	// The status written straight into an update of the main resource, in
	// both versions: the write is allowed (it changes a label), the status
	// is the stored one.
	for _, gv := range []string{cnatv1alpha1.GroupVersion.String(), cnatv1beta1.GroupVersion.String()} {
		u := read(gv)
		phase := "RUNNING"
		if gv == cnatv1beta1.GroupVersion.String() {
			phase = "Running"
		}
		g.Expect(unstructured.SetNestedField(u.Object, map[string]any{"phase": phase, "attempts": int64(5), "reason": "Retrying"}, "status")).To(Succeed())
		u.SetLabels(map[string]string{"edited-through": strings.ReplaceAll(gv, "/", "-")})
		g.Expect(mallory.Update(ctx, u)).To(Succeed())
		g.Expect(get(g, ns, at.Name).Labels).To(HaveKey("edited-through"))
		g.Expect(stored()).To(BeComparableTo(before))
	}

	// And the status subresource itself is not theirs.
	u = read(cnatv1beta1.GroupVersion.String())
	g.Expect(unstructured.SetNestedField(u.Object, int64(5), "status", "attempts")).To(Succeed())
	err := mallory.Status().Update(ctx, u)
	g.Expect(err).To(Satisfy(apierrors.IsForbidden))
	g.Expect(stored()).To(BeComparableTo(before))
}

// TestManagedFieldsResetDoesNotFreezeTheStatus: a user who may patch Ats,
// and nothing else, resets the managed fields of a running At. The
// controller, with the rights its manifests give it, still records the
// outcome, and a Succeeded At is not left Reconciling (kstatus would read
// it InProgress for good).
func TestManagedFieldsResetDoesNotFreezeTheStatus(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns := testNamespace(t)
	const user = "mallory-ats"
	g.Expect(admin.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{cnatv1beta1.GroupVersion.Group}, Resources: []string{"ats"}, Verbs: []string{"get", "patch"}}},
	})).To(Succeed())
	g.Expect(admin.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	})).To(Succeed())
	mallory := impersonating(t, user)

	at := runs(ns, "reset", in(0), "sleep 15", 0, 15*time.Second)
	g.Expect(admin.Create(ctx, at)).To(Succeed())
	g.Eventually(func(g Gomega) cnatv1beta1.Phase {
		got := get(g, ns, at.Name)
		g.Expect(got.Status.PodName).NotTo(BeEmpty())
		return got.Status.Phase
	}, timeout).Should(Equal(cnatv1beta1.PhaseRunning))
	g.Expect(mallory.Patch(ctx, &cnatv1beta1.At{ObjectMeta: metav1.ObjectMeta{Name: at.Name, Namespace: ns}},
		client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"managedFields":[{}]}}`)))).To(Succeed())

	g.Eventually(phaseOf(ns, at.Name), timeout).Should(Equal(cnatv1beta1.PhaseSucceeded))
	g.Expect(get(g, ns, at.Name).Status.Conditions).NotTo(ContainElement(HaveField("Type", "Reconciling")))
	g.Eventually(func(g Gomega) []string {
		pods := podsOf(g, ns, at.Name)
		g.Expect(pods).To(HaveLen(1))
		return pods[0].Finalizers
	}, timeout).ShouldNot(ContainElement(cnatv1beta1.TrackingFinalizer))
}
