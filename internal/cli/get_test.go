package cli

import (
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/atpod"
)

// finishedAt creates an At whose status says attempt 1 ran in its first
// Pod and exited 3, as the controller would have written it.
func finishedAt(t *testing.T, ns, name string) *cnatv1beta1.At {
	t.Helper()
	g := NewWithT(t)
	at := &cnatv1beta1.At{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       cnatv1beta1.AtSpec{Schedule: "2026-11-21T09:00:00Z", Command: "exit 3"},
	}
	g.Expect(testClient.Create(t.Context(), at)).To(Succeed())
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	at.Status = cnatv1beta1.AtStatus{
		Phase: cnatv1beta1.PhaseFailed, Reason: cnatv1beta1.ReasonError, Message: "the command exited 3",
		Attempts: 1, ExitCode: ptr.To[int32](3), PodName: atpod.PodName(at, 1), ScheduledTime: &now, CompletionTime: &now,
		Conditions: []metav1.Condition{{Type: cnatv1beta1.ConditionFailed, Status: metav1.ConditionTrue, Reason: cnatv1beta1.ReasonError, Message: "the command exited 3", LastTransitionTime: now}},
	}
	g.Expect(testClient.Status().Update(t.Context(), at)).To(Succeed())
	return at
}

// cells splits a table, as the table printer writes it, into its rows'
// cells: a column starts where its header does (headers are separated by
// at least two spaces, and a header may have one, as TIME ZONE).
func cells(out string) [][]string {
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var starts []int
	for _, m := range regexp.MustCompile(`\S+( \S+)*`).FindAllStringIndex(lines[0], -1) {
		starts = append(starts, m[0])
	}
	var rows [][]string
	for _, line := range lines {
		var row []string
		for i, start := range starts {
			end := len(line)
			if i+1 < len(starts) {
				end = min(starts[i+1], end)
			}
			row = append(row, strings.TrimSpace(line[min(start, end):end]))
		}
		rows = append(rows, row)
	}
	return rows
}

// age is what the AGE column holds: a duration as kubectl prints it.
var age = MatchRegexp(`^[0-9]+[smhdy]`)

// TestGet: the table is the API server's, from the CRD's printer columns,
// as kubectl get ats prints it; -o prints the objects as kubectl does.
func TestGet(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	failing := finishedAt(t, ns, "failing")
	_, _, code := cnatctl(t, "at", "2030-01-01T10:00", "--time-zone", "Europe/Berlin", "--name", "later", "-n", ns, "--", "true")
	g.Expect(code).To(Equal(ExitOK))

	out, _, code := cnatctl(t, "get", "-n", ns)
	g.Expect(code).To(Equal(ExitOK))
	g.Expect(cells(out)).To(HaveExactElements(
		HaveExactElements("NAME", "SCHEDULE", "TIME ZONE", "COMMAND", "PHASE", "AGE"),
		HaveExactElements("failing", "2026-11-21T09:00:00Z", "", "exit 3", "Failed", age),
		HaveExactElements("later", "2030-01-01T10:00", "Europe/Berlin", "true", "", age),
	))

	out, _, code = cnatctl(t, "get", "-n", ns, "-o", "wide")
	g.Expect(code).To(Equal(ExitOK))
	g.Expect(cells(out)).To(HaveExactElements(
		HaveExactElements("NAME", "SCHEDULE", "TIME ZONE", "COMMAND", "PHASE", "EXIT CODE", "POD", "AGE"),
		HaveExactElements("failing", "2026-11-21T09:00:00Z", "", "exit 3", "Failed", "3", failing.Status.PodName, age),
		HaveExactElements("later", "2030-01-01T10:00", "Europe/Berlin", "true", "", "", "", age),
	))

	out, _, code = cnatctl(t, "get", "failing", "-n", ns)
	g.Expect(code).To(Equal(ExitOK))
	g.Expect(cells(out)).To(HaveExactElements(
		HaveExactElements("NAME", "SCHEDULE", "TIME ZONE", "COMMAND", "PHASE", "AGE"),
		HaveExactElements("failing", "2026-11-21T09:00:00Z", "", "exit 3", "Failed", age),
	))

	out, _, code = cnatctl(t, "get", "-A")
	g.Expect(code).To(Equal(ExitOK))
	g.Expect(cells(out)).To(ContainElements(
		HaveExactElements("NAMESPACE", "NAME", "SCHEDULE", "TIME ZONE", "COMMAND", "PHASE", "AGE"),
		HaveExactElements(ns, "failing", "2026-11-21T09:00:00Z", "", "exit 3", "Failed", age),
		HaveExactElements(ns, "later", "2030-01-01T10:00", "Europe/Berlin", "true", "", age),
	))

	// The whole At, as the API server has it, without managedFields.
	out, _, code = cnatctl(t, "get", "failing", "-n", ns, "-o", "yaml")
	g.Expect(code).To(Equal(ExitOK))
	got := &cnatv1beta1.At{}
	g.Expect(yaml.UnmarshalStrict([]byte(out), got)).To(Succeed())
	g.Expect(got.TypeMeta).To(Equal(metav1.TypeMeta{APIVersion: cnatv1beta1.GroupVersion.String(), Kind: "At"}))
	g.Expect(got.Spec).To(BeComparableTo(failing.Spec))
	g.Expect(got.Status).To(BeComparableTo(failing.Status))
	g.Expect(got.ManagedFields).To(BeEmpty())
	out, _, code = cnatctl(t, "get", "failing", "-n", ns, "-o", "yaml", "--show-managed-fields")
	g.Expect(code).To(Equal(ExitOK))
	got = &cnatv1beta1.At{}
	g.Expect(yaml.UnmarshalStrict([]byte(out), got)).To(Succeed())
	g.Expect(got.ManagedFields).NotTo(BeEmpty())

	out, _, code = cnatctl(t, "get", "later", "-n", ns, "-o", "yaml")
	g.Expect(code).To(Equal(ExitOK))
	g.Expect(out).To(ContainSubstring("apiVersion: cnat.programming-kubernetes.info/v1beta1\n"))
	g.Expect(out).To(ContainSubstring("timeZone: Europe/Berlin\n"))

	out, _, code = cnatctl(t, "get", "-n", ns, "-o", "json")
	g.Expect(code).To(Equal(ExitOK))
	list := &cnatv1beta1.AtList{}
	g.Expect(yaml.UnmarshalStrict([]byte(out), list)).To(Succeed())
	g.Expect(list.TypeMeta).To(Equal(metav1.TypeMeta{APIVersion: cnatv1beta1.GroupVersion.String(), Kind: "AtList"}))
	g.Expect(list.Items).To(HaveExactElements(
		And(HaveField("TypeMeta.Kind", "At"), HaveField("TypeMeta.APIVersion", cnatv1beta1.GroupVersion.String()), HaveField("Name", "failing"), HaveField("ManagedFields", BeEmpty())),
		And(HaveField("TypeMeta.Kind", "At"), HaveField("TypeMeta.APIVersion", cnatv1beta1.GroupVersion.String()), HaveField("Name", "later"), HaveField("ManagedFields", BeEmpty())),
	))

	out, _, code = cnatctl(t, "get", "-n", ns, "-o", "name")
	g.Expect(code).To(Equal(ExitOK))
	g.Expect(out).To(Equal("at.cnat.programming-kubernetes.info/failing\nat.cnat.programming-kubernetes.info/later\n"))

	out, _, code = cnatctl(t, "get", "failing", "-n", ns, "-o", "jsonpath={.status.exitCode} {.status.podName}")
	g.Expect(code).To(Equal(ExitOK))
	g.Expect(out).To(Equal("3 " + failing.Status.PodName))

	out, errOut, code := cnatctl(t, "get", "-n", ns, "-o", "bogus")
	g.Expect(code).To(Equal(ExitError))
	g.Expect(errOut).To(ContainSubstring(`unable to match a printer suitable for the output format "bogus"`))
	g.Expect(out).To(BeEmpty())

	out, errOut, code = cnatctl(t, "get", "nope", "-n", ns)
	g.Expect(code).To(Equal(ExitError))
	g.Expect(errOut).To(ContainSubstring("at/nope not found in namespace " + ns))
	g.Expect(out).To(BeEmpty(), "no usage after an error that is not the command line's")

	empty := newNamespace(t)
	out, errOut, code = cnatctl(t, "get", "-n", empty)
	g.Expect(code).To(Equal(ExitOK))
	g.Expect(out).To(BeEmpty())
	g.Expect(errOut).To(Equal("No Ats in namespace " + empty + ".\n"))
}

func TestLogs(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	gone := finishedAt(t, ns, "gone")
	_, errOut, code := cnatctl(t, "logs", "gone", "-n", ns)
	g.Expect(code).To(Equal(ExitError))
	g.Expect(errOut).To(ContainSubstring("the Pod " + gone.Status.PodName + " of at/gone is gone"))

	// A Pod that exists but runs on no node (as on simulated nodes, there
	// is no kubelet to serve its log).
	nolog := finishedAt(t, ns, "nolog")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: atpod.PodName(nolog, 1), Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "run", Image: "busybox:1.37"}}},
	}
	g.Expect(testClient.Create(t.Context(), pod)).To(Succeed())
	_, errOut, code = cnatctl(t, "logs", "nolog", "--attempt", "1", "-n", ns)
	g.Expect(code).To(Equal(ExitOK))
	g.Expect(errOut).To(ContainSubstring("Pod " + pod.Name + " of at/nolog is not scheduled to a node yet (phase Pending): no logs yet."))

	_, errOut, code = cnatctl(t, "logs", "nolog", "--attempt", "2", "-n", ns)
	g.Expect(code).To(Equal(ExitError))
	g.Expect(errOut).To(ContainSubstring("has started 1 attempt(s), not 2"))

	_, _, code = cnatctl(t, "at", "+1h", "--name", "pending", "-n", ns, "--", "true")
	g.Expect(code).To(Equal(ExitOK))
	_, errOut, code = cnatctl(t, "logs", "pending", "-n", ns)
	g.Expect(code).To(Equal(ExitError))
	g.Expect(errOut).To(ContainSubstring("at/pending has not started a Pod yet"))
}
