package judge

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// namespaceCreated is the audit event of the run's namespace's create.
func namespaceCreated(ns string, second int) string {
	line, err := json.Marshal(map[string]any{
		"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata",
		"stage": "ResponseComplete", "verb": "create",
		"objectRef":                map[string]any{"resource": "namespaces", "name": ns, "apiVersion": "v1"},
		"responseStatus":           map[string]any{"code": 201},
		"requestReceivedTimestamp": t0.Add(time.Duration(second) * time.Second).Format(metav1.RFC3339Micro),
	})
	if err != nil {
		panic(err)
	}
	return string(line)
}

func writeLog(t *testing.T, path string, modified time.Time, lines ...string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, modified, modified); err != nil {
		t.Fatal(err)
	}
}

// A run that spans a rotation of the audit log is judged from both files;
// without the rotated file its Pods would look lost, and a log that does
// not reach back to the run's start is an error, never a verdict.
func TestReadAuditFilesAcrossARotation(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	inRun := func(ns string) bool { return ns == "chaos" }
	since := time.Now().Add(-time.Hour)

	first := pod("x-1", "p1", "a1", corev1.PodPending, nil)
	done := pod("x-1", "p1", "a1", corev1.PodSucceeded, ptr.To[int32](0))
	second := pod("y-1", "p2", "a2", corev1.PodPending, nil)
	// Rotated before the run: not read (it is not even JSON).
	writeLog(t, filepath.Join(dir, "audit-2026-11-24T10-00-00.000.log"), since.Add(-time.Hour), "not an audit event")
	rotated := filepath.Join(dir, "audit-2026-11-24T12-00-00.000.log")
	writeLog(t, rotated, since.Add(time.Minute), namespaceCreated("chaos", 0), event("create", "", 201, first, 1))
	writeLog(t, path, time.Now(), event("patch", "status", 200, done, 2), event("create", "", 201, second, 3))

	rec, err := ReadAuditFiles(path, since, inRun)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rec.Began).To(BeTrue())
	g.Expect(rec.Creates).To(HaveLen(2), "the Pod created before the rotation counts")
	g.Expect(rec.Creates[0].PodUID).To(Equal("p1"))
	g.Expect(rec.Ends).To(HaveLen(1))

	// The rotated file gone: the judge must refuse to judge.
	g.Expect(os.Remove(rotated)).To(Succeed())
	_, err = ReadAuditFiles(path, since, inRun)
	g.Expect(err).To(MatchError(ContainSubstring("does not hold the create of the run's namespace")))
}
