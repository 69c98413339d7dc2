package e2e

import (
	"os"
	"regexp"
	"testing"

	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"
)

// TestKindConfig checks kind-config.yaml with kind's own config types, since
// kind cannot run where `make verify` runs: no unknown fields, one control
// plane and one or two workers, every node image pinned by digest.
func TestKindConfig(t *testing.T) {
	raw, err := os.ReadFile("../kind-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cluster v1alpha4.Cluster
	if err := yaml.UnmarshalStrict(raw, &cluster); err != nil {
		t.Fatalf("kind-config.yaml is not a kind v1alpha4 Cluster: %v", err)
	}
	if cluster.Kind != "Cluster" || cluster.APIVersion != "kind.x-k8s.io/v1alpha4" {
		t.Errorf("kind-config.yaml: kind %q, apiVersion %q; want Cluster, kind.x-k8s.io/v1alpha4", cluster.Kind, cluster.APIVersion)
	}
	roles := map[v1alpha4.NodeRole]int{}
	pinned := regexp.MustCompile(`^kindest/node:v1\.[0-9]+\.[0-9]+@sha256:[0-9a-f]{64}$`)
	for i, node := range cluster.Nodes {
		roles[node.Role]++
		if !pinned.MatchString(node.Image) {
			t.Errorf("nodes[%d].image %q: want kindest/node:vX.Y.Z@sha256:<digest>", i, node.Image)
		}
	}
	if roles[v1alpha4.ControlPlaneRole] != 1 {
		t.Errorf("%d control-plane nodes, want 1", roles[v1alpha4.ControlPlaneRole])
	}
	if w := roles[v1alpha4.WorkerRole]; w < 1 || w > 2 {
		t.Errorf("%d worker nodes, want 1 or 2", w)
	}
}
