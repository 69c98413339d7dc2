// Package images reads the container images out of rendered manifests: the
// overlays' image check (hack/verify) and make release's check of
// install.yaml (hack/release).
package images

// Container is a container found in a rendered object: its name and image.
type Container struct {
	Name, Image string
}

// Containers finds the containers anywhere in a rendered object (decoded
// from YAML or JSON): the items of every containers, initContainers or
// ephemeralContainers list whose image is a string. A CRD's schema has such
// lists too, but there the image is a schema, so they are not counted.
func Containers(v any) []Container {
	var out []Container
	switch v := v.(type) {
	case map[string]any:
		for key, child := range v {
			if list, ok := child.([]any); ok && (key == "containers" || key == "initContainers" || key == "ephemeralContainers") {
				for _, item := range list {
					m, _ := item.(map[string]any)
					if image, ok := m["image"].(string); ok {
						name, _ := m["name"].(string)
						out = append(out, Container{Name: name, Image: image})
					}
				}
			}
			out = append(out, Containers(child)...)
		}
	case []any:
		for _, child := range v {
			out = append(out, Containers(child)...)
		}
	}
	return out
}
