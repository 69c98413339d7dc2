package cli

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// writeOverlay writes an overlay of one ConfigMap into dir.
func writeOverlay(t *testing.T, dir, configMap string) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("resources: [cm.yaml]\n"), 0o600)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: "+configMap+"\n  namespace: default\ndata:\n  v: \"1\"\n"), 0o600)).To(Succeed())
}

// TestOverlaysWithOneNameAreTwoSets: two overlays that are both called
// "production", each applied with --prune and no --name, do not prune each
// other.
func TestOverlaysWithOneNameAreTwoSets(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	cnat, team := filepath.Join(root, "cnat", "production"), filepath.Join(root, "team", "production")
	writeOverlay(t, cnat, "from-cnat")
	writeOverlay(t, team, "from-team")
	_, _, code := cnatctl(t, "apply", "-k", cnat, "--prune")
	g.Expect(code).To(Equal(ExitOK))
	out, _, code := cnatctl(t, "apply", "-k", team, "--prune")
	g.Expect(code).To(Equal(ExitOK))
	g.Expect(out).NotTo(ContainSubstring("deleted"))
	g.Expect(testClient.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "from-cnat"}, &corev1.ConfigMap{})).To(Succeed(), "the other overlay's object was pruned")

	// One set name given to both explicitly: the second is refused, naming
	// both overlays, and prunes nothing.
	other := filepath.Join(root, "other", "production")
	writeOverlay(t, other, "from-other")
	_, _, code = cnatctl(t, "apply", "-k", other, "--prune", "--name", "production")
	g.Expect(code).To(Equal(ExitOK), "a new set")
	_, errOut, code := cnatctl(t, "apply", "-k", cnat, "--prune", "--name", "production")
	g.Expect(code).To(Equal(ExitError))
	g.Expect(errOut).To(ContainSubstring("--change-source"))
	g.Expect(errOut).To(ContainSubstring(filepath.ToSlash(other)))
	g.Expect(testClient.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "from-other"}, &corev1.ConfigMap{})).To(Succeed(), "pruned although refused")
}

// TestSIGTERMStopsAtOnce: cnatctl apply against an API server that never
// answers ends within seconds of SIGTERM, exit 2, instead of waiting for
// the server.
func TestSIGTERMStopsAtOnce(t *testing.T) {
	g := NewWithT(t)
	asked := make(chan struct{}, 100)
	release := make(chan struct{})
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() {
		close(release)
		server.CloseClientConnections()
		server.Close()
	})
	hung := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(os.WriteFile(hung, []byte(`apiVersion: v1
kind: Config
clusters: [{name: hung, cluster: {server: "`+server.URL+`"}}]
users: [{name: admin, user: {token: t}}]
contexts: [{name: hung, context: {cluster: hung, user: admin}}]
current-context: hung
`), 0o600)).To(Succeed())

	var stdout, stderr bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &stdout, ErrOut: &stderr}
	done := make(chan int, 1)
	go func() {
		done <- Main([]string{"cnatctl", "--kubeconfig", hung, "--cache-dir", t.TempDir(), "--request-timeout", "0", "apply", "-k", testdata("waitset")}, streams)
	}()
	select {
	case <-asked: // cnatctl waits for the server: its signal handler is in place
	case <-time.After(30 * time.Second):
		t.Fatal("cnatctl never asked the server")
	}
	g.Expect(syscall.Kill(os.Getpid(), syscall.SIGTERM)).To(Succeed())
	select {
	case code := <-done:
		g.Expect(code).To(Equal(ExitError))
	case <-time.After(10 * time.Second):
		t.Fatal("cnatctl did not stop within 10s of SIGTERM")
	}
}
