package lifecycle_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	cnatv1alpha1 "github.com/programming-kubernetes/cnat/api/v1alpha1"
	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/lifecycle"
)

// readCRD reads the CRD make manifests generates.
func readCRD(g Gomega) *apiextensionsv1.CustomResourceDefinition {
	data, err := os.ReadFile(filepath.Join("..", "..", "kustomize", "base", "crd", "bases", "cnat.programming-kubernetes.info_ats.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	crd := &apiextensionsv1.CustomResourceDefinition{}
	g.Expect(yaml.UnmarshalStrict(data, crd)).To(Succeed())
	return crd
}

// TestStatusBoundsMatchTheCRD: the bounds the controller cuts to are the
// ones the schema of each version states.
func TestStatusBoundsMatchTheCRD(t *testing.T) {
	g := NewWithT(t)
	crd := readCRD(g)
	g.Expect(crd.Spec.Versions).To(HaveLen(2))
	for _, v := range crd.Spec.Versions {
		status := v.Schema.OpenAPIV3Schema.Properties["status"].Properties
		g.Expect(status["message"].MaxLength).To(HaveValue(BeEquivalentTo(cnatv1beta1.MaxMessageLength)), v.Name)
		g.Expect(status["reason"].MaxLength).To(HaveValue(BeEquivalentTo(cnatv1beta1.MaxReasonLength)), v.Name)
		g.Expect(status["podName"].MaxLength).To(HaveValue(BeEquivalentTo(cnatv1beta1.MaxPodNameLength)), v.Name)
		g.Expect(status["conditions"].MaxItems).To(HaveValue(BeEquivalentTo(cnatv1beta1.MaxConditions)), v.Name)
		g.Expect(status["conditions"].Items.Schema.Properties["message"].MaxLength).To(HaveValue(BeEquivalentTo(cnatv1beta1.MaxMessageLength)), v.Name)
	}
}

// crdSchemas are the validators of the generated CRD's versions, the
// API server's own code over the very schema make manifests writes.
func crdSchemas(g Gomega) map[string]apiservervalidation.SchemaValidator {
	crd := readCRD(g)
	validators := map[string]apiservervalidation.SchemaValidator{}
	for _, v := range crd.Spec.Versions {
		internal := &apiextensions.CustomResourceValidation{}
		g.Expect(apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v.Schema, internal, nil)).To(Succeed())
		validator, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
		g.Expect(err).NotTo(HaveOccurred())
		validators[v.Name] = validator
	}
	g.Expect(validators).To(HaveKey("v1beta1"))
	g.Expect(validators).To(HaveKey("v1alpha1"))
	return validators
}

// schemaErrors validates at with status, in both versions, as the API
// server validates a status write against the CRD's schema.
func schemaErrors(g Gomega, validators map[string]apiservervalidation.SchemaValidator, at *cnatv1beta1.At, status *cnatv1beta1.AtStatus) field.ErrorList {
	beta := at.DeepCopy()
	beta.Status = *status
	beta.APIVersion, beta.Kind = cnatv1beta1.GroupVersion.String(), "At"
	alpha := &cnatv1alpha1.At{}
	g.Expect(alpha.ConvertFrom(beta)).To(Succeed())
	alpha.APIVersion, alpha.Kind = cnatv1alpha1.GroupVersion.String(), "At"
	var errs field.ErrorList
	for version, obj := range map[string]runtime.Object{"v1beta1": beta, "v1alpha1": alpha} {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		g.Expect(err).NotTo(HaveOccurred())
		for _, e := range apiservervalidation.ValidateCustomResource(nil, u, validators[version]) {
			e.Detail = version + ": " + e.Detail
			errs = append(errs, e)
		}
	}
	return errs
}

// longText is a message far beyond every bound, of characters of one to
// four bytes, so that a cut by bytes would split a character.
func longText(prefix string) string {
	return prefix + strings.Repeat("é😀x", 20000)
}

// refusingEffects are Effects over an At due now whose Pod the API server
// refuses with err; they keep the status written.
type refusingEffects struct {
	at      *cnatv1beta1.At
	err     error
	written []*cnatv1beta1.AtStatus
}

func (e *refusingEffects) CachedAt() (*cnatv1beta1.At, error) { return e.at, nil }
func (e *refusingEffects) CachedPods() ([]corev1.Pod, error)  { return nil, nil }
func (e *refusingEffects) FreshAt(*cnatv1beta1.At, lifecycle.Decision) (*cnatv1beta1.At, error) {
	return e.at, nil
}
func (e *refusingEffects) FreshPods() ([]corev1.Pod, error) { return nil, nil }
func (e *refusingEffects) CreatePod(*cnatv1beta1.At, lifecycle.Decision) (*lifecycle.Refusal, error) {
	return &lifecycle.Refusal{Reason: cnatv1beta1.ReasonPodForbidden, Err: e.err}, nil
}
func (e *refusingEffects) WriteStatus(_ *cnatv1beta1.At, status *cnatv1beta1.AtStatus) error {
	e.written = append(e.written, status)
	return nil
}
func (e *refusingEffects) Release(*corev1.Pod) error      { return errors.New("nothing to release") }
func (e *refusingEffects) DeleteAt(*cnatv1beta1.At) error { return errors.New("nothing to delete") }

// TestLongMessagesFitTheSchema: whatever length of text the controller
// copies into an At's status — an admission webhook's refusal, a
// container's termination message — the status it writes is one the API
// server accepts in both versions, the message cut at a character with its
// beginning kept and the cut said, and the Event's note one the Events API
// accepts.
func TestLongMessagesFitTheSchema(t *testing.T) {
	g := NewWithT(t)
	validators := crdSchemas(g)

	const refusal = `admission webhook "deny.example.com" denied the request: `
	const termination = "the last words of the command: "
	tests := []struct {
		name   string
		status func(g Gomega) (*cnatv1beta1.At, *cnatv1beta1.AtStatus)
		reason string
		starts string
	}{{
		name: "a Pod refused with a long message",
		status: func(g Gomega) (*cnatv1beta1.At, *cnatv1beta1.AtStatus) {
			e := &refusingEffects{at: newAt(), err: errors.New(longText(refusal))}
			_, err := lifecycle.Reconcile(e, t0)
			g.Expect(err).To(MatchError(e.err))
			g.Expect(e.written).To(HaveLen(1))
			return e.at, e.written[0]
		},
		reason: cnatv1beta1.ReasonPodForbidden,
		starts: refusal + "é😀x",
	}, {
		name: "a Pod that failed with a long termination message",
		status: func(g Gomega) (*cnatv1beta1.At, *cnatv1beta1.AtStatus) {
			at := newAt(recorded(cnatv1beta1.PhaseRunning, 1))
			pod := podOf(g, at, 1, t0, exited(2, t0.Add(time.Second)), func(p *corev1.Pod) {
				p.Status.ContainerStatuses[0].State.Terminated.Message = longText(termination)
			})
			d := lifecycle.Decide(at, []corev1.Pod{pod}, t0.Add(2*time.Second))
			g.Expect(d.Status).NotTo(BeNil())
			return at, d.Status
		},
		reason: cnatv1beta1.ReasonError,
		starts: "Pod job-7f3c1a52-1 failed with exit code 2: " + termination + "é😀x",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			at, status := tt.status(g)
			g.Expect(status.Reason).To(Equal(tt.reason))

			g.Expect(schemaErrors(g, validators, at, status)).To(BeEmpty())
			for _, m := range append([]string{status.Message}, conditionMessages(status)...) {
				g.Expect(utf8.ValidString(m)).To(BeTrue(), "valid UTF-8")
				g.Expect(utf8.RuneCountInString(m)).To(Equal(cnatv1beta1.MaxMessageLength))
				g.Expect(m).To(HavePrefix(tt.starts))
				g.Expect(m).To(HaveSuffix(" ... (truncated)"))
			}

			// The API server would refuse the message uncut: the bound
			// is the schema's, not one of the test's.
			uncut := status.DeepCopy()
			uncut.Message += "x"
			g.Expect(schemaErrors(g, validators, at, uncut)).To(ContainElement(HaveField("Field", "status.message")))

			events := lifecycle.Events(&at.Status, status)
			g.Expect(events).NotTo(BeEmpty())
			for _, e := range events {
				g.Expect(len(e.Note)).To(BeNumerically("<=", 1024), "the events.k8s.io/v1 limit of a note, in bytes")
				g.Expect(utf8.ValidString(e.Note)).To(BeTrue(), "valid UTF-8")
				g.Expect(e.Note).To(HavePrefix(tt.starts))
			}
		})
	}
}

func conditionMessages(st *cnatv1beta1.AtStatus) []string {
	var out []string
	for _, c := range st.Conditions {
		out = append(out, c.Message)
	}
	return out
}
