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

// Build renders the kustomization in dir with kustomize's default options
// (the same as `kustomize build dir`: no plugins, files only from inside the
// kustomization root, resources in input order) and returns its objects.
//
// It needs no cluster. A dir that does not exist, is not a directory, holds
// no kustomization, or refers to a file that is not valid YAML gives an
// error that names the path; so does an object without apiVersion, kind or
// metadata.name (server-side apply needs all three).
func Build(ctx context.Context, dir string) ([]*unstructured.Unstructured, error) {
	m, err := render(ctx, dir)
	if err != nil {
		return nil, err
	}
	var objects []*unstructured.Unstructured
	var problems Problems
	for _, r := range m.Resources() {
		// Through JSON, so that numbers are int64 or float64 as in every
		// other Unstructured (kyaml's own maps hold plain ints).
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

// BuildYAML renders the kustomization in dir like Build and returns the
// multi-document YAML kustomize writes for it, byte for byte what
// `kustomize build dir` prints.
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

// render runs krusty on dir after checking that dir is a directory, so that
// the most common mistake, a wrong path, gets a plain message. Every file is
// read through boundedFS. It returns as soon as ctx is done (krusty itself
// cannot be interrupted: it is left to stop at its next read).
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
