package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	. "github.com/onsi/gomega"

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
	raw, err := os.ReadFile("../VERSION")
	g.Expect(err).NotTo(HaveOccurred())
	version := strings.TrimSpace(string(raw))
	g.Expect(version).To(MatchRegexp(`^v[0-9]+\.[0-9]+\.[0-9]+$`), "VERSION")

	overlays, err := filepath.Glob("../kustomize/overlays/*")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(overlays).NotTo(BeEmpty())
	controllers := 0
	for _, dir := range overlays {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			g := NewWithT(t)
			objects, err := manifests.Build(dir)
			g.Expect(err).NotTo(HaveOccurred())
			for _, obj := range objects {
				for _, c := range containersIn(obj.Object) {
					where := manifests.Ref(obj) + " container " + c.name
					ref, err := name.ParseReference(c.image)
					g.Expect(err).NotTo(HaveOccurred(), "%s: image %q", where, c.image)
					tag, byTag := ref.(name.Tag)
					if byTag {
						// Without a tag, the reference means latest.
						g.Expect(c.image).To(HaveSuffix(":"+tag.TagStr()), "%s: image %q has no tag", where, c.image)
						g.Expect(tag.TagStr()).NotTo(Equal("latest"), "%s: image %q", where, c.image)
					}
					if obj.GetKind() == "Deployment" && obj.GetName() == "cnat-controller" && c.name == "manager" {
						controllers++
						g.Expect(byTag).To(BeTrue(), "%s: the controller's image %q is not tagged with VERSION", where, c.image)
						g.Expect(tag.TagStr()).To(Equal(version), "%s: the controller's image %q is not tagged with VERSION", where, c.image)
					}
				}
			}
		})
	}
	// The controller runs in-cluster in every overlay but local (which
	// runs it on the host): the check above must have met it.
	g.Expect(controllers).To(Equal(len(overlays)-1), "controller Deployments found in %v", overlays)
}

type container struct{ name, image string }

// containersIn finds the containers anywhere in a rendered object: the
// items of every containers, initContainers or ephemeralContainers list
// whose image is a string (a CRD's schema has such lists too, but there
// the image is a schema).
func containersIn(v any) []container {
	var out []container
	switch v := v.(type) {
	case map[string]any:
		for key, child := range v {
			if list, ok := child.([]any); ok && (key == "containers" || key == "initContainers" || key == "ephemeralContainers") {
				for _, item := range list {
					m, _ := item.(map[string]any)
					image, isString := m["image"].(string)
					if isString {
						n, _ := m["name"].(string)
						out = append(out, container{name: n, image: image})
					}
				}
			}
			out = append(out, containersIn(child)...)
		}
	case []any:
		for _, child := range v {
			out = append(out, containersIn(child)...)
		}
	}
	return out
}
