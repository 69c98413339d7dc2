package manifests

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync/atomic"

	yaml "go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// What one render may read, so an overlay from a pull request cannot take the
// machine that renders it down.
const (
	// MaxFileBytes bounds each file (the At CRD is under 100 KiB).
	MaxFileBytes = 8 << 20
	// MaxRenderBytes bounds all files of one render together.
	MaxRenderBytes = 64 << 20
	// MaxYAMLNodes bounds a file's YAML nodes with aliases expanded ("billion laughs").
	MaxYAMLNodes = 1_000_000
)

// boundedFS is the file system kustomize renders from: it refuses a file
// beyond the limits, naming it, and stops once ctx is done.
type boundedFS struct {
	filesys.FileSystem
	ctx  context.Context
	read atomic.Int64
}

// ReadFile returns the contents of path within the limits.
func (b *boundedFS) ReadFile(path string) ([]byte, error) {
	if err := b.ctx.Err(); err != nil {
		return nil, err
	}
	f, err := b.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%s: larger than %d MiB, the most cnatctl reads from one file", path, MaxFileBytes>>20)
	}
	if b.read.Add(int64(len(data))) > MaxRenderBytes {
		return nil, fmt.Errorf("%s: the overlay's files are larger than %d MiB together, the most cnatctl reads for one render", path, MaxRenderBytes>>20)
	}
	if n := yamlNodes(data); n > MaxYAMLNodes {
		return nil, fmt.Errorf("%s: its YAML aliases expand to more than %d nodes (nested anchors, a \"billion laughs\"); cnatctl refuses to render it", path, MaxYAMLNodes)
	}
	return data, nil
}

// yamlNodes counts the nodes of data's documents with aliases expanded,
// stopping past MaxYAMLNodes, without expanding anything (a count per anchor).
func yamlNodes(data []byte) int {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	counted := map[*yaml.Node]int{}
	var count func(n *yaml.Node) int
	count = func(n *yaml.Node) int {
		if c, ok := counted[n]; ok {
			return c
		}
		counted[n] = MaxYAMLNodes + 1 // an alias to itself counts as too many
		c := 1
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			c = count(n.Alias)
		}
		for _, child := range n.Content {
			if c += count(child); c > MaxYAMLNodes {
				break
			}
		}
		counted[n] = c
		return c
	}
	total := 0
	for total <= MaxYAMLNodes {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			break // the end, or what is not YAML: kustomize reports it
		}
		total += count(&doc)
	}
	return total
}
