package webhook

import (
	"encoding/json"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/scheduler"
)

// FuzzValidateAt: whatever an At holds, validation does not panic, every
// error names a field of the At and says something, and an At it lets
// through has what the controller needs: a schedule that parses, a name
// that fits a label, something to run, a command the kernel takes.
// `make test-unit` runs it for a few seconds.
func FuzzValidateAt(f *testing.F) {
	f.Add("book", "2019-04-12T10:12:00Z", "", "echo YAY", []byte(nil))
	f.Add("berlin", "2026-11-21T09:00", "Europe/Berlin", "", []byte(`{"spec":{"containers":[{"name":"main"}]}}`))
	f.Add(strings.Repeat("a", 64), "2099-02-30T09:00:00Z", "Local", "a\x00b", []byte(`{"spec":{"restartPolicy":"Always","serviceAccountName":"Not A Name!"}}`))
	f.Add("x", "2099-01-01T25:00:00Z", "../../etc/passwd", strings.Repeat("😀", 32768), []byte(`{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"m","env":[{"name":"V","value":"\u0000"}]}]}}`))
	f.Fuzz(func(t *testing.T, name, schedule, zone, command string, template []byte) {
		g := NewWithT(t)
		at := &cnatv1beta1.At{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       cnatv1beta1.AtSpec{Schedule: schedule, Command: command},
		}
		if zone != "" {
			at.Spec.TimeZone = ptr.To(zone)
		}
		if len(template) > 0 {
			tmpl := &corev1.PodTemplateSpec{}
			if json.Unmarshal(template, tmpl) == nil {
				at.Spec.Template = tmpl
			}
		}
		errs := validateAt(at)
		for _, err := range errs {
			g.Expect(err.Field).To(Or(HavePrefix("spec."), HavePrefix("metadata.")), "names a field of the At: %v", err)
			g.Expect(err.Error()).NotTo(BeEmpty())
			g.Expect(err.Detail != "" || err.Type != "").To(BeTrue())
		}
		if len(errs) > 0 {
			return
		}
		_, parseErr := scheduler.ParseSchedule(schedule, zone)
		g.Expect(parseErr).NotTo(HaveOccurred(), "an admitted schedule parses")
		g.Expect(len(name)).To(BeNumerically("<=", 63))
		g.Expect(command != "" || at.Spec.Template != nil).To(BeTrue(), "something to run")
		g.Expect(command).NotTo(ContainSubstring("\x00"))
		g.Expect(len(command)).To(BeNumerically("<=", MaxCommandBytes))
		if at.Spec.Template != nil {
			g.Expect(at.Spec.Template.Spec.Containers).NotTo(BeEmpty())
			g.Expect(at.Spec.Template.Spec.RestartPolicy).To(Or(BeEmpty(), Equal(corev1.RestartPolicyNever)))
		}
	})
}
