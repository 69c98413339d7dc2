package cli

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

func TestAtCreatesAnAt(t *testing.T) {
	ns := newNamespace(t)
	before := time.Now()
	out, _, code := cnatctl(t, "at", "+1h", "-n", ns, "--", "echo", "hi")
	if code != ExitOK {
		t.Fatalf("exit code %d", code)
	}
	m := regexp.MustCompile(`^at/(at-[a-z0-9]+) created, runs at (\S+)\n$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("output %q", out)
	}
	at := &cnatv1beta1.At{}
	if err := testClient.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: m[1]}, at); err != nil {
		t.Fatal(err)
	}
	if at.Spec.Command != "echo hi" || at.Spec.TimeZone != nil {
		t.Errorf("spec %+v", at.Spec)
	}
	scheduled, err := time.Parse(time.RFC3339, at.Spec.Schedule)
	if err != nil || !strings.HasSuffix(at.Spec.Schedule, "Z") {
		t.Fatalf("schedule %q is not RFC 3339 UTC: %v", at.Spec.Schedule, err)
	}
	if d := scheduled.Sub(before); d < time.Hour || d > time.Hour+time.Minute {
		t.Errorf("schedule %s is %s from now, want 1h", at.Spec.Schedule, d)
	}
	if m[2] != at.Spec.Schedule {
		t.Errorf("output says %s, spec %s", m[2], at.Spec.Schedule)
	}
	if len(at.ManagedFields) == 0 || at.ManagedFields[0].Manager != cnatv1beta1.CLIFieldManager {
		t.Errorf("managed fields %+v", at.ManagedFields)
	}
}

func TestAtWallClockWithTimeZone(t *testing.T) {
	ns := newNamespace(t)
	out, _, code := run(t, "kubectl-cnat", "at", "2030-03-31T02:30", "--time-zone", "Europe/Berlin", "--name", "dst", "-n", ns, "--", "date")
	if code != ExitOK {
		t.Fatalf("exit code %d", code)
	}
	// 02:30 does not exist that day in Berlin: it runs at 03:30+02:00.
	if out != "at/dst created, runs at 2030-03-31T03:30:00+02:00 (Europe/Berlin)\n" {
		t.Errorf("output %q", out)
	}
	at := &cnatv1beta1.At{}
	if err := testClient.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "dst"}, at); err != nil {
		t.Fatal(err)
	}
	if at.Spec.Schedule != "2030-03-31T02:30" || at.Spec.TimeZone == nil || *at.Spec.TimeZone != "Europe/Berlin" {
		t.Errorf("spec %+v", at.Spec)
	}
}

func TestAtRefusedByTheAPIServer(t *testing.T) {
	ns := newNamespace(t)
	name := strings.Repeat("a", 64) // a label value: at most 63
	_, errOut, code := cnatctl(t, "at", "+1m", "--name", name, "-n", ns, "--", "true")
	if code != ExitError {
		t.Fatalf("exit code %d", code)
	}
	if !strings.Contains(errOut, "metadata.name must be at most 63 characters") {
		t.Errorf("the API server's message is not shown: %s", errOut)
	}
}

func TestAtUsage(t *testing.T) {
	for _, args := range [][]string{
		{"at", "+1h"},
		{"at", "+1h", "echo", "--", "hi"},
		{"at", "next week", "--", "true"},
	} {
		_, errOut, code := cnatctl(t, args...)
		if code != ExitError || !strings.Contains(errOut, "Run 'cnatctl at --help' for usage.") {
			t.Errorf("%v: exit %d, stderr %s", args, code, errOut)
		}
	}
}
