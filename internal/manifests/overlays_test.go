package manifests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	. "github.com/onsi/gomega"

	"github.com/programming-kubernetes/cnat/test/testenv"
)

// TestRepoOverlaysApplyWithKubectl applies each of the repository's
// overlays as a platform team would, with kubectl itself: client-side
// (`kubectl apply -k`, which keeps the whole object in an annotation of at
// most 256 KiB — the CRD must fit), then server-side, then server-side
// again, which must change nothing. Each overlay gets an API server of its
// own: the same objects, differently configured, as on separate clusters.
func TestRepoOverlaysApplyWithKubectl(t *testing.T) {
	g := NewWithT(t)
	kubectl := filepath.Join(testenv.BinaryAssetsDirectory(), "kubectl")
	_, err := os.Stat(kubectl)
	g.Expect(err).NotTo(HaveOccurred(), "kubectl from make tools")
	for _, overlay := range []string{"local", "local-incluster", "kind", "production", "production-monitoring"} {
		t.Run(overlay, func(t *testing.T) {
			g := NewWithT(t)
			env := &envtest.Environment{BinaryAssetsDirectory: testenv.BinaryAssetsDirectory()}
			cfg, err := env.Start()
			g.Expect(err).NotTo(HaveOccurred())
			t.Cleanup(func() { _ = env.Stop() })
			if strings.HasPrefix(overlay, "production") {
				installStubKinds(t, cfg, "cert-manager.io", "Issuer", "Certificate")
			}
			if overlay == "production-monitoring" {
				installStubKinds(t, cfg, "monitoring.coreos.com", "ServiceMonitor", "PrometheusRule")
			}
			user, err := env.AddUser(envtest.User{Name: "platform-team", Groups: []string{"system:masters"}}, nil)
			g.Expect(err).NotTo(HaveOccurred())
			kubeconfig, err := user.KubeConfig()
			g.Expect(err).NotTo(HaveOccurred())
			path := filepath.Join(t.TempDir(), "kubeconfig")
			g.Expect(os.WriteFile(path, kubeconfig, 0o600)).To(Succeed())
			dir := filepath.Join("..", "..", "kustomize", "overlays", overlay)
			run := func(args ...string) string {
				t.Helper()
				cmd := exec.Command(kubectl, append([]string{"--kubeconfig", path}, args...)...)
				out, err := cmd.CombinedOutput()
				g.Expect(err).NotTo(HaveOccurred(), "kubectl %s\n%s", strings.Join(args, " "), out)
				return string(out)
			}

			run("apply", "-k", dir)
			run("apply", "--server-side", "-k", dir)
			objs, err := Build(t.Context(), dir)
			g.Expect(err).NotTo(HaveOccurred())
			before := resourceVersions(t, cfg, objs)
			out := run("apply", "--server-side", "-k", dir)
			g.Expect(before).NotTo(BeEmpty(), "no objects applied")
			// A second server-side apply changes nothing.
			g.Expect(resourceVersions(t, cfg, objs)).To(BeComparableTo(before), "resourceVersions after a second server-side apply; kubectl said:\n%s", out)
		})
	}
}

// resourceVersions reads, for every object of the rendered overlay, its
// resourceVersion in the cluster.
func resourceVersions(t *testing.T, cfg *rest.Config, objs []*unstructured.Unstructured) map[string]string {
	t.Helper()
	g := NewWithT(t)
	c, err := client.New(cfg, client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	rvs := map[string]string{}
	for _, obj := range objs {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(obj.GroupVersionKind())
		g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(obj), live)).To(Succeed(), "%s %s", obj.GetKind(), obj.GetName())
		rvs[obj.GetKind()+"/"+obj.GetNamespace()+"/"+obj.GetName()] = live.GetResourceVersion()
	}
	return rvs
}

// installStubKinds stands in for the CRDs of another project's kinds in
// group (v1, namespaced): cert-manager's Issuer and Certificate, which the
// production overlays need, and the Prometheus Operator's ServiceMonitor
// and PrometheusRule, which production-monitoring needs. Their schema is
// the other project's business; only that the API server takes them is
// tested.
func installStubKinds(t *testing.T, cfg *rest.Config, group string, kinds ...string) {
	t.Helper()
	g := NewWithT(t)
	c, err := client.New(cfg, client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(apiextensionsv1.AddToScheme(c.Scheme())).To(Succeed())
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, kind := range kinds {
		plural := strings.ToLower(kind) + "s"
		crd := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: group,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, Plural: plural},
				Scope: apiextensionsv1.NamespaceScoped,
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
					Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object", XPreserveUnknownFields: ptr.To(true),
					}},
				}},
			},
		}
		g.Expect(c.Create(context.Background(), crd)).To(Succeed())
		crds = append(crds, crd)
	}
	g.Expect(envtest.WaitForCRDs(cfg, crds, envtest.CRDInstallOptions{PollInterval: 100 * time.Millisecond, MaxTime: 30 * time.Second})).To(Succeed())
}
