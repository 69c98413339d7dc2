package cli

import (
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

func TestAtCreatesAnAt(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	before := time.Now()
	out, _, code := cnatctl(t, "at", "+1h", "-n", ns, "--", "echo", "hi")
	g.Expect(code).To(Equal(ExitOK))
	m := regexp.MustCompile(`^at/(at-[a-z0-9]+) created, runs at (\S+)\n$`).FindStringSubmatch(out)
	g.Expect(m).NotTo(BeNil(), "output %q", out)
	at := &cnatv1beta1.At{}
	g.Expect(testClient.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: m[1]}, at)).To(Succeed())
	g.Expect(at.Spec.Command).To(Equal("echo hi"))
	g.Expect(at.Spec.TimeZone).To(BeNil())
	g.Expect(at.Spec.Schedule).To(HaveSuffix("Z"), "RFC 3339 in UTC")
	scheduled, err := time.Parse(time.RFC3339, at.Spec.Schedule)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(scheduled.Sub(before)).To(And(BeNumerically(">=", time.Hour), BeNumerically("<=", time.Hour+time.Minute)), "an hour from now")
	g.Expect(m[2]).To(Equal(at.Spec.Schedule), "the output says when it runs")
	g.Expect(at.ManagedFields).NotTo(BeEmpty())
	g.Expect(at.ManagedFields[0].Manager).To(Equal(cnatv1beta1.CLIFieldManager))
}

func TestAtWallClockWithTimeZone(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	out, _, code := run(t, "kubectl-cnat", "at", "2030-03-31T02:30", "--time-zone", "Europe/Berlin", "--name", "dst", "-n", ns, "--", "date")
	g.Expect(code).To(Equal(ExitOK))
	// 02:30 does not exist that day in Berlin: it runs at 03:30+02:00.
	g.Expect(out).To(Equal("at/dst created, runs at 2030-03-31T03:30:00+02:00 (Europe/Berlin)\n"))
	at := &cnatv1beta1.At{}
	g.Expect(testClient.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "dst"}, at)).To(Succeed())
	g.Expect(at.Spec.Schedule).To(Equal("2030-03-31T02:30"))
	g.Expect(at.Spec.TimeZone).To(HaveValue(Equal("Europe/Berlin")))
}

func TestAtRefusedByTheAPIServer(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	name := strings.Repeat("a", 64) // a label value: at most 63
	out, errOut, code := cnatctl(t, "at", "+1m", "--name", name, "-n", ns, "--", "true")
	g.Expect(code).To(Equal(ExitError))
	g.Expect(errOut).To(ContainSubstring("metadata.name must be at most 63 characters"), "the API server's message is shown")
	g.Expect(out).NotTo(ContainSubstring("Usage:"), "not a mistake in the command line")
}
