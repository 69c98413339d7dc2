package verify

import (
	"os"
	"regexp"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"

	"github.com/programming-kubernetes/cnat/internal/manifests"
)

// TestKindConfig checks kind-config.yaml with kind's own config types, since
// kind cannot run where `make verify` runs: no unknown fields, one control
// plane and one or two workers, every node image pinned by digest.
func TestKindConfig(t *testing.T) {
	g := NewWithT(t)
	raw, err := os.ReadFile("../../kind-config.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	var cluster v1alpha4.Cluster
	g.Expect(yaml.UnmarshalStrict(raw, &cluster)).To(Succeed(), "kind-config.yaml is not a kind v1alpha4 Cluster")
	g.Expect(cluster.TypeMeta).To(Equal(v1alpha4.TypeMeta{Kind: "Cluster", APIVersion: "kind.x-k8s.io/v1alpha4"}))
	roles := map[v1alpha4.NodeRole]int{}
	for i, node := range cluster.Nodes {
		roles[node.Role]++
		g.Expect(node.Image).To(MatchRegexp(`^kindest/node:v1\.[0-9]+\.[0-9]+@sha256:[0-9a-f]{64}$`), "nodes[%d].image", i)
	}
	g.Expect(roles[v1alpha4.ControlPlaneRole]).To(Equal(1), "control-plane nodes")
	g.Expect(roles[v1alpha4.WorkerRole]).To(And(BeNumerically(">=", 1), BeNumerically("<=", 2)), "worker nodes")
}

// TestKindWorkflowKubernetesWindow: the e2e-kind workflow runs one job per
// end of the Kubernetes window cnat is tested on, the same two minors the
// local cluster runs (make e2e, make test-oldest): the oldest is the
// minimum cnatctl apply accepts, the newest the Kubernetes
// hack/tools/kubernetes pins, on the node image kind-config.yaml pins. Every
// node image is pinned by digest, with a kind version to run it.
func TestKindWorkflowKubernetesWindow(t *testing.T) {
	g := NewWithT(t)
	raw, err := os.ReadFile("../../.github/workflows/e2e-kind.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	var workflow struct {
		Jobs map[string]struct {
			Strategy struct {
				Matrix struct {
					Include []struct {
						Kubernetes string `json:"kubernetes"`
						Kind       string `json:"kind"`
						NodeImage  string `json:"node-image"`
					} `json:"include"`
				} `json:"matrix"`
			} `json:"strategy"`
		} `json:"jobs"`
	}
	g.Expect(yaml.Unmarshal(raw, &workflow)).To(Succeed())
	include := workflow.Jobs["e2e-kind"].Strategy.Matrix.Include

	raw, err = os.ReadFile("../../kind-config.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	var cluster v1alpha4.Cluster
	g.Expect(yaml.UnmarshalStrict(raw, &cluster)).To(Succeed())
	g.Expect(cluster.Nodes).NotTo(BeEmpty())

	images := map[string]string{}
	for i, job := range include {
		g.Expect(job.NodeImage).To(MatchRegexp(`^kindest/node:v`+regexp.QuoteMeta(job.Kubernetes)+`\.[0-9]+@sha256:[0-9a-f]{64}$`), "matrix.include[%d].node-image", i)
		g.Expect(job.Kind).To(MatchRegexp(`^v0\.[0-9]+\.[0-9]+$`), "matrix.include[%d].kind", i)
		images[job.Kubernetes] = job.NodeImage
	}
	newest := minorOf(t, "../tools/kubernetes/go.mod")
	g.Expect(images).To(Equal(map[string]string{
		manifests.MinimumKubernetesVersion: images[manifests.MinimumKubernetesVersion],
		newest:                             cluster.Nodes[0].Image,
	}), "the minors of the matrix: the minimum %s and the newest %s, on kind-config.yaml's image", manifests.MinimumKubernetesVersion, newest)
	g.Expect(images[manifests.MinimumKubernetesVersion]).NotTo(BeEmpty())
}

// minorOf is the minor ("1.36") of the Kubernetes a tools module's go.mod pins.
func minorOf(t *testing.T, goMod string) string {
	raw, err := os.ReadFile(goMod)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	m := regexp.MustCompile(`(?m)^require k8s\.io/kubernetes v(1\.[0-9]+)\.[0-9]+$`).FindSubmatch(raw)
	NewWithT(t).Expect(m).NotTo(BeNil(), "%s pins no k8s.io/kubernetes", goMod)
	return string(m[1])
}
