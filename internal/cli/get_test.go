package cli

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/apply"
)

// finishedAt creates an At whose status says attempt 1 ran in its first
// Pod and exited 3, as the controller would have written it.
func finishedAt(t *testing.T, ns, name string) *cnatv1beta1.At {
	t.Helper()
	at := &cnatv1beta1.At{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       cnatv1beta1.AtSpec{Schedule: "2026-11-21T09:00:00Z", Command: "exit 3"},
	}
	if err := testClient.Create(t.Context(), at); err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	at.Status = cnatv1beta1.AtStatus{
		Phase: cnatv1beta1.PhaseFailed, Reason: cnatv1beta1.ReasonError, Message: "the command exited 3",
		Attempts: 1, ExitCode: ptr.To[int32](3), PodName: apply.PodName(at, 1), ScheduledTime: &now, CompletionTime: &now,
		Conditions: []metav1.Condition{{Type: cnatv1beta1.ConditionFailed, Status: metav1.ConditionTrue, Reason: cnatv1beta1.ReasonError, Message: "the command exited 3", LastTransitionTime: now}},
	}
	if err := testClient.Status().Update(t.Context(), at); err != nil {
		t.Fatal(err)
	}
	return at
}

func TestGet(t *testing.T) {
	ns := newNamespace(t)
	failing := finishedAt(t, ns, "failing")
	if _, _, code := cnatctl(t, "at", "2030-01-01T10:00", "--time-zone", "Europe/Berlin", "--name", "later", "-n", ns, "--", "true"); code != ExitOK {
		t.Fatal("at failed")
	}

	out, _, code := cnatctl(t, "get", "-n", ns)
	if code != ExitOK {
		t.Fatalf("exit code %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "NAME SCHEDULE PHASE EXIT-CODE POD AGE" {
		t.Fatalf("table:\n%s", out)
	}
	if f := strings.Fields(lines[1]); len(f) != 6 || f[0] != "failing" || f[1] != "2026-11-21T09:00:00Z" || f[2] != "Failed" || f[3] != "3" || f[4] != failing.Status.PodName {
		t.Errorf("row %q", lines[1])
	}
	if f := strings.Fields(lines[2]); len(f) != 6 || f[0] != "later" || f[1] != "2030-01-01T10:00[Europe/Berlin]" || f[2] != "<none>" || f[3] != "<none>" {
		t.Errorf("row %q", lines[2])
	}

	out, _, code = cnatctl(t, "get", "failing", "-n", ns)
	if code != ExitOK {
		t.Fatalf("exit code %d", code)
	}
	for _, want := range []string{"Schedule:        2026-11-21T09:00:00Z", "Phase:           Failed", "Reason:          Error",
		"Message:         the command exited 3", "Attempts:        1", "Exit code:       3", "Pod:             " + failing.Status.PodName, "Failed  True    Error"} {
		if !strings.Contains(out, want) {
			t.Errorf("detail lacks %q:\n%s", want, out)
		}
	}

	out, _, _ = cnatctl(t, "get", "later", "-n", ns, "-o", "yaml")
	if !strings.Contains(out, "apiVersion: cnat.programming-kubernetes.info/v1beta1") || !strings.Contains(out, "timeZone: Europe/Berlin") {
		t.Errorf("yaml:\n%s", out)
	}

	if _, errOut, code := cnatctl(t, "get", "nope", "-n", ns); code != ExitError || !strings.Contains(errOut, "at/nope not found in namespace "+ns) {
		t.Errorf("missing At: %d %s", code, errOut)
	}
}

func TestLogs(t *testing.T) {
	ns := newNamespace(t)
	gone := finishedAt(t, ns, "gone")
	_, errOut, code := cnatctl(t, "logs", "gone", "-n", ns)
	if code != ExitError || !strings.Contains(errOut, "the Pod "+gone.Status.PodName+" of at/gone is gone") {
		t.Errorf("Pod gone: %d %s", code, errOut)
	}

	// A Pod that exists but runs on no node (as on simulated nodes, there
	// is no kubelet to serve its log).
	nolog := finishedAt(t, ns, "nolog")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: apply.PodName(nolog, 1), Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "run", Image: "busybox:1.37"}}},
	}
	if err := testClient.Create(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = cnatctl(t, "logs", "nolog", "--attempt", "1", "-n", ns)
	if code != ExitOK || !strings.Contains(errOut, "Pod "+pod.Name+" of at/nolog is not scheduled to a node yet (phase Pending): no logs yet.") {
		t.Errorf("Pod without node: %d %s", code, errOut)
	}

	_, errOut, code = cnatctl(t, "logs", "nolog", "--attempt", "2", "-n", ns)
	if code != ExitError || !strings.Contains(errOut, "has started 1 attempt(s), not 2") {
		t.Errorf("attempt 2: %d %s", code, errOut)
	}

	if _, _, code := cnatctl(t, "at", "+1h", "--name", "pending", "-n", ns, "--", "true"); code != ExitOK {
		t.Fatal("at failed")
	}
	_, errOut, code = cnatctl(t, "logs", "pending", "-n", ns)
	if code != ExitError || !strings.Contains(errOut, "at/pending has not started a Pod yet") {
		t.Errorf("pending: %d %s", code, errOut)
	}
}
