package verify

import (
	"os"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"
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
