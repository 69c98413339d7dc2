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

	"github.com/programming-kubernetes/cnat/internal/testenv"
)

// TestRepoOverlaysApplyWithKubectl applies each of the repository's
// overlays as a platform team would, with kubectl itself: client-side
// (`kubectl apply -k`, which keeps the whole object in an annotation of at
// most 256 KiB — the CRD must fit), then server-side, then server-side
// again, which must change nothing. Each overlay gets an API server of its
// own: the same objects, differently configured, as on separate clusters.
func TestRepoOverlaysApplyWithKubectl(t *testing.T) {
	kubectl := filepath.Join(testenv.BinaryAssetsDirectory(), "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		t.Fatalf("kubectl from make tools: %v", err)
	}
	for _, overlay := range []string{"local", "local-incluster", "kind", "production"} {
		t.Run(overlay, func(t *testing.T) {
			env := &envtest.Environment{BinaryAssetsDirectory: testenv.BinaryAssetsDirectory()}
			cfg, err := env.Start()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = env.Stop() })
			if overlay == "production" {
				installCertManagerKinds(t, cfg)
			}
			user, err := env.AddUser(envtest.User{Name: "platform-team", Groups: []string{"system:masters"}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			kubeconfig, err := user.KubeConfig()
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "kubeconfig")
			if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join("..", "..", "kustomize", "overlays", overlay)
			run := func(args ...string) string {
				t.Helper()
				cmd := exec.Command(kubectl, append([]string{"--kubeconfig", path}, args...)...)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
				}
				return string(out)
			}

			run("apply", "-k", dir)
			run("apply", "--server-side", "-k", dir)
			objs, err := Build(dir)
			if err != nil {
				t.Fatal(err)
			}
			before := resourceVersions(t, cfg, objs)
			out := run("apply", "--server-side", "-k", dir)
			after := resourceVersions(t, cfg, objs)
			for obj, rv := range before {
				if after[obj] != rv {
					t.Errorf("%s: a second server-side apply changed it (resourceVersion %s → %s)\n%s", obj, rv, after[obj], out)
				}
			}
			if len(before) == 0 {
				t.Fatal("no objects applied")
			}
		})
	}
}

// resourceVersions reads, for every object of the rendered overlay, its
// resourceVersion in the cluster.
func resourceVersions(t *testing.T, cfg *rest.Config, objs []*unstructured.Unstructured) map[string]string {
	t.Helper()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rvs := map[string]string{}
	for _, obj := range objs {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(obj.GroupVersionKind())
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), live); err != nil {
			t.Fatalf("%s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
		rvs[obj.GetKind()+"/"+obj.GetNamespace()+"/"+obj.GetName()] = live.GetResourceVersion()
	}
	return rvs
}

// installCertManagerKinds stands in for cert-manager's CRDs, which the
// production overlay's Issuer and Certificate need. Their schema is
// cert-manager's business; only that the API server takes them is tested.
func installCertManagerKinds(t *testing.T, cfg *rest.Config) {
	t.Helper()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(c.Scheme()); err != nil {
		t.Fatal(err)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, kind := range []string{"Issuer", "Certificate"} {
		plural := strings.ToLower(kind) + "s"
		crd := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: plural + ".cert-manager.io"},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: "cert-manager.io",
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
		if err := c.Create(context.Background(), crd); err != nil {
			t.Fatal(err)
		}
		crds = append(crds, crd)
	}
	if err := envtest.WaitForCRDs(cfg, crds, envtest.CRDInstallOptions{PollInterval: 100 * time.Millisecond, MaxTime: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
}
