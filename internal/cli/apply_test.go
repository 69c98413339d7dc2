package cli

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestApplyRefusesAnOlderCluster: on an API server older than the minimum
// Kubernetes version, apply says which version the cluster runs and which
// it needs, exits 2 and sends nothing but reads: the server is asked its
// version before anything is planned, let alone changed.
func TestApplyRefusesAnOlderCluster(t *testing.T) {
	g := NewWithT(t)
	var mu sync.Mutex
	var requests []string
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests = append(requests, r.Method+" "+r.URL.Path)
		mu.Unlock()
		if r.URL.Path != "/version" {
			http.Error(w, "this test server only answers /version", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"major": "1", "minor": "31", "gitVersion": "v1.31.4", "platform": "linux/amd64"}`))
	}))
	t.Cleanup(server.Close)
	old := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(os.WriteFile(old, []byte(`apiVersion: v1
kind: Config
clusters: [{name: old, cluster: {server: "`+server.URL+`"}}]
users: [{name: admin, user: {token: t}}]
contexts: [{name: old, context: {cluster: old, user: admin}}]
current-context: old
`), 0o600)).To(Succeed())

	var stdout, stderr bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &stdout, ErrOut: &stderr}
	code := Main([]string{"cnatctl", "--kubeconfig", old, "--cache-dir", t.TempDir(), "apply", "-k", testdata("lifecycle")}, streams)
	out, errOut := stdout.String(), stderr.String()
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	g.Expect(code).To(Equal(ExitError))
	g.Expect(out).To(BeEmpty(), "no object reported")
	g.Expect(errOut).To(ContainSubstring("the cluster runs Kubernetes v1.31.4; cnat needs Kubernetes v1.32 or later"))
	g.Expect(errOut).To(ContainSubstring("nothing was applied"))
	mu.Lock()
	defer mu.Unlock()
	g.Expect(requests).To(ContainElement("GET /version"))
	g.Expect(requests).To(HaveEach(HavePrefix("GET ")), "only reads")

	// On the test cluster, which runs the Kubernetes of make tools, the
	// same apply goes through.
	_, _, code = cnatctl(t, "apply", "-k", testdata("lifecycle"))
	g.Expect(code).To(Equal(ExitOK))
	g.Expect(testClient.Get(t.Context(), client.ObjectKey{Name: "cnatctl-lifecycle"}, &corev1.Namespace{})).To(Succeed())
}
