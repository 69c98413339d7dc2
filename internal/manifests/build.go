package manifests

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Build renders the kustomization in dir as `kustomize build dir` does and
// returns its objects; errors name the path, and an object without
// apiVersion, kind or name (server-side apply needs them) is one.
func Build(ctx context.Context, dir string) ([]*unstructured.Unstructured, error) {
	m, err := render(ctx, dir)
	if err != nil {
		return nil, err
	}
	var objects []*unstructured.Unstructured
	var problems Problems
	for _, r := range m.Resources() {
		// Through JSON: numbers int64 or float64 as in every Unstructured.
		data, err := r.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("building %s: reading %s: %w", dir, r.CurId(), err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			return nil, fmt.Errorf("building %s: reading %s: %w", dir, r.CurId(), err)
		}
		if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
			problems = append(problems, Problem{
				Object: Ref(u),
				Err:    errors.New("every object needs apiVersion, kind and metadata.name"),
			})
			continue
		}
		objects = append(objects, u)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("building %s: %w", dir, problems)
	}
	return objects, nil
}

// BuildYAML returns what `kustomize build dir` prints, byte for byte.
func BuildYAML(ctx context.Context, dir string) ([]byte, error) {
	m, err := render(ctx, dir)
	if err != nil {
		return nil, err
	}
	out, err := m.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("building %s: writing YAML: %w", dir, err)
	}
	return out, nil
}

// render runs krusty on dir through boundedFS, after checking dir is a
// directory (a plain message for a wrong path); it returns once ctx is done.
func render(ctx context.Context, dir string) (resmap.ResMap, error) {
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("building %s: kustomization directory does not exist", dir)
	case err != nil:
		return nil, fmt.Errorf("building %s: %w", dir, err)
	case !info.IsDir():
		return nil, fmt.Errorf("building %s: not a directory (give the directory that holds kustomization.yaml)", dir)
	}
	type rendered struct {
		m   resmap.ResMap
		err error
	}
	done := make(chan rendered, 1)
	go func() {
		m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(&boundedFS{FileSystem: filesys.MakeFsOnDisk(), ctx: ctx}, dir)
		done <- rendered{m, err}
	}()
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("building %s: %w", dir, context.Cause(ctx))
	case r := <-done:
		if r.err != nil {
			return nil, fmt.Errorf("building %s: %w", dir, r.err)
		}
		return r.m, nil
	}
}
