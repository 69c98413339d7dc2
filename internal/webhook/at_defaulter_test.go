package webhook

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// TestDefaulterPatchesOnlyTheAuthorThen: for an At with nothing to default
// (no template, or restartPolicy and every image set), the webhook's only
// patch records the author. An At with something to default is patched
// more.
func TestDefaulterPatchesOnlyTheAuthorThen(t *testing.T) {
	defaulter := &AtDefaulter{DefaultImage: testDefaultImage}
	handler := skipUndecodable{recordAuthor{defaulter: defaulter, next: admission.WithDefaulter(testScheme, defaulter)}}
	patches := func(g *WithT, spec string) []string {
		raw := []byte(`{"apiVersion":"cnat.programming-kubernetes.info/v1beta1","kind":"At","metadata":{"name":"x","namespace":"team"},"spec":` + spec + `}`)
		resp := handler.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}, UserInfo: authenticationv1.UserInfo{Username: "alice"},
		}})
		g.Expect(resp.Allowed).To(BeTrue(), "%s: %v", spec, resp.Result)
		var paths []string
		for _, p := range resp.Patches {
			paths = append(paths, p.Path)
		}
		return paths
	}
	for _, spec := range []string{
		`{"schedule":"2099-01-01T00:00:00Z","command":"echo"}`,
		`{"schedule":"2099-01-01T00:00:00Z","command":"echo","template":null}`,
		`{"schedule":"2099-01-01T00:00:00Z","command":"true","template":{"spec":{"restartPolicy":"Never","nodeSelector":{"a":"b"},"tolerations":[{"key":"a","operator":"Equal","value":"b","effect":"NoSchedule"}],"containers":[{"name":"run","image":"busybox:1.37"}]}}}`,
		`{"schedule":"2099-01-01T09:00","timeZone":"Europe/Paris","template":{"metadata":{"labels":{"app":"x"},"annotations":{"a":""}},"spec":{"restartPolicy":"Never",` +
			`"initContainers":[{"name":"init","image":"alpine","args":[""]}],` +
			`"containers":[{"name":"c","image":"busybox","resources":{"limits":{"cpu":"0.5","memory":"1e3"},"requests":{"cpu":"100m"}},"ports":[{"containerPort":80}],` +
			`"env":[{"name":"A","value":""},{"name":"B","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}}],"securityContext":{},"volumeMounts":[{"name":"v","mountPath":"/v"}]},` +
			`{"name":"d","image":"busybox","command":["sh"],"stdin":false,"tty":false}],` +
			`"volumes":[{"name":"v","emptyDir":{}}],"securityContext":{"runAsNonRoot":false},"automountServiceAccountToken":false,"terminationGracePeriodSeconds":0}}}`,
		`{"schedule":"2099-01-01T00:00:00Z","command":"echo","template":{"spec":{"restartPolicy":"Always","containers":[]}}}`,
	} {
		g := NewWithT(t)
		g.Expect(patches(g, spec)).To(Equal([]string{"/metadata/annotations"}), "nothing to default but the author: %s", spec)
	}
	g := NewWithT(t)
	g.Expect(patches(g, `{"schedule":"2099-01-01T00:00:00Z","template":{"spec":{"restartPolicy":"Never","initContainers":[{"name":"init"}],"containers":[{"name":"c","image":"busybox"}]}}}`)).
		To(ContainElement(HavePrefix("/spec/template")), "an init container without an image gets the default image")
	g.Expect(patches(g, `{"schedule":"2099-01-01T00:00:00Z","template":{"spec":{"containers":[{"name":"c","image":"busybox"}]}}}`)).
		To(ContainElement(HavePrefix("/spec/template")), "a template without restartPolicy gets Never")
}

// defaultingCalls is how many requests the defaulting webhook has answered.
func defaultingCalls(g *WithT) float64 {
	families, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	var n float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_webhook_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "webhook" && l.GetValue() == DefaultingPath {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}

// TestDefaultingWebhookOnEveryWrite: the API server calls the defaulting
// webhook for every create and update, through either version, whether the
// At has something to default or not (its author is recorded or kept), and
// an At with something to default is defaulted.
func TestDefaultingWebhookOnEveryWrite(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns := newNamespace(t)
	full := template(map[string]any{"restartPolicy": "Never", "containers": []any{map[string]any{"name": "main", "image": "alpine:3.20"}}})
	create := func(name string, v1alpha1 bool, edit func(map[string]any)) *unstructured.Unstructured {
		obj := newAtObject(ns, name, v1alpha1)
		if edit != nil {
			edit(obj.Object)
		}
		g.Expect(adminClient.Create(ctx, obj)).To(Succeed())
		return obj
	}

	before := defaultingCalls(g)
	create("full", false, full)
	create("full-v1alpha1", true, full)
	obj := create("command-only", false, nil)
	g.Expect(defaultingCalls(g)).To(Equal(before+3), "nothing to default: the webhook is called all the same")
	g.Expect(adminClient.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"a"}}}`)))).To(Succeed())
	// (More than once if the patch met the controller's status write.)
	g.Expect(defaultingCalls(g)).To(BeNumerically(">", before+3), "an update of the labels: the webhook keeps the author")

	create("no-init-image", true, template(map[string]any{
		"restartPolicy":  "Never",
		"initContainers": []any{map[string]any{"name": "init"}},
		"containers":     []any{map[string]any{"name": "main", "image": "alpine:3.20"}},
	}))
	at := &cnatv1beta1.At{}
	g.Expect(adminClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "no-init-image"}, at)).To(Succeed())
	g.Expect(at.Spec.Template.Spec.InitContainers[0].Image).To(Equal(testDefaultImage))
	g.Expect(at.Spec.Template.Spec.RestartPolicy).To(Equal(corev1.RestartPolicyNever))
}
