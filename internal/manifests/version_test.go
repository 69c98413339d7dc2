package manifests

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/version"
)

// TestCheckServerVersion: clusters older than the minimum are refused with
// both versions named, in the forms providers report them; the minimum and
// later pass.
func TestCheckServerVersion(t *testing.T) {
	for gitVersion, refused := range map[string]bool{
		"v1.31.9":           true,
		"v1.31.4-eks-1a2b3": true,
		"v1.30.14":          true,
		"v1.29.0+k3s1":      true,
		"garbage":           true,
		"v1.32.0":           false,
		"v1.32.5-gke.1200":  false,
		"v1.33.1+k3s1":      false,
		"v1.36.3":           false,
		"v2.0.0":            false,
	} {
		t.Run(gitVersion, func(t *testing.T) {
			g := NewWithT(t)
			err := checkServerVersion(&version.Info{GitVersion: gitVersion})
			if !refused {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(gitVersion)))
			g.Expect(err).To(MatchError(ContainSubstring("cnat needs Kubernetes v1.32 or later")))
		})
	}
}

// TestREADMEStatesTheMinimumKubernetesVersion: the README's requirements
// say the version cnatctl apply checks.
func TestREADMEStatesTheMinimumKubernetesVersion(t *testing.T) {
	g := NewWithT(t)
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(readme)).To(ContainSubstring("**Requirements:** Kubernetes v" + MinimumKubernetesVersion + " or later"))
}
