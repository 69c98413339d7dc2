package verify

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	. "github.com/onsi/gomega"

	"github.com/programming-kubernetes/cnat/hack/internal/images"
	"github.com/programming-kubernetes/cnat/internal/manifests"
)

// TestOverlayImages renders every overlay as cnatctl applies it and checks
// each container image it deploys: an explicit tag (or a digest), never
// latest, and for the controller the release in VERSION, the tag `make
// docker-build` builds. An image that moves (latest, or no tag, which means
// latest) lets two replicas, or a Pod rescheduled a week later, run
// different builds. Run by make verify, like TestKindConfig.
func TestOverlayImages(t *testing.T) {
	g := NewWithT(t)
	raw, err := os.ReadFile("../../VERSION")
	g.Expect(err).NotTo(HaveOccurred())
	version := strings.TrimSpace(string(raw))
	g.Expect(version).To(MatchRegexp(`^v[0-9]+\.[0-9]+\.[0-9]+$`), "VERSION")

	overlays, err := filepath.Glob("../../kustomize/overlays/*")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(overlays).NotTo(BeEmpty())
	controllers := 0
	for _, dir := range overlays {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			g := NewWithT(t)
			objects, err := manifests.Build(t.Context(), dir)
			g.Expect(err).NotTo(HaveOccurred())
			for _, obj := range objects {
				for _, c := range images.Containers(obj.Object) {
					where := manifests.Ref(obj) + " container " + c.Name
					ref, err := name.ParseReference(c.Image)
					g.Expect(err).NotTo(HaveOccurred(), "%s: image %q", where, c.Image)
					tag, byTag := ref.(name.Tag)
					if byTag {
						// Without a tag, the reference means latest.
						g.Expect(c.Image).To(HaveSuffix(":"+tag.TagStr()), "%s: image %q has no tag", where, c.Image)
						g.Expect(tag.TagStr()).NotTo(Equal("latest"), "%s: image %q", where, c.Image)
					}
					if obj.GetKind() == "Deployment" && obj.GetName() == "cnat-controller" && c.Name == "manager" {
						controllers++
						g.Expect(byTag).To(BeTrue(), "%s: the controller's image %q is not tagged with VERSION", where, c.Image)
						g.Expect(tag.TagStr()).To(Equal(version), "%s: the controller's image %q is not tagged with VERSION", where, c.Image)
					}
				}
			}
		})
	}
	// The controller runs in-cluster in every overlay but local (which
	// runs it on the host): the check above must have met it.
	g.Expect(controllers).To(Equal(len(overlays)-1), "controller Deployments found in %v", overlays)
}
