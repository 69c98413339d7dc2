package main

import (
	"archive/tar"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// multiOptions are the flags of a multi-platform build.
type multiOptions struct {
	platforms   platformBinaries
	ociDir      string
	digestFile  string
	annotations keyValues
}

// platformBinary is one -platform-binary OS/ARCH=FILE.
type platformBinary struct {
	platform v1.Platform
	binary   string
}

type platformBinaries []platformBinary

func (p *platformBinaries) String() string {
	var s []string
	for _, b := range *p {
		s = append(s, b.platform.String()+"="+b.binary)
	}
	return strings.Join(s, ",")
}

func (p *platformBinaries) Set(value string) error {
	platform, binary, ok := strings.Cut(value, "=")
	if !ok || binary == "" {
		return fmt.Errorf("%q is not OS/ARCH=FILE", value)
	}
	pl, err := v1.ParsePlatform(platform)
	if err != nil {
		return err
	}
	if pl.OS != "linux" || pl.Architecture == "" {
		return fmt.Errorf("%q: only linux/ARCH images are built", platform)
	}
	for _, b := range *p {
		if b.platform.Equals(*pl) {
			return fmt.Errorf("platform %s given twice", platform)
		}
	}
	*p = append(*p, platformBinary{platform: *pl, binary: binary})
	return nil
}

// keyValues is a repeated KEY=VALUE flag.
type keyValues map[string]string

func (kv *keyValues) String() string {
	var s []string
	for k, v := range *kv {
		s = append(s, k+"="+v)
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}

func (kv *keyValues) Set(value string) error {
	k, v, ok := strings.Cut(value, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q is not KEY=VALUE", value)
	}
	if *kv == nil {
		*kv = keyValues{}
	}
	(*kv)[k] = v
	return nil
}

// runMulti builds the multi-platform image index: one image per
// -platform-binary, each the binary as entrypoint (all under the same name),
// run as user.
func runMulti(tag, out, binary, busybox string, user int, o multiOptions) error {
	if tag == "" || out == "" || binary != "" || busybox != "" || flag.NArg() > 0 {
		return errors.New("usage: image-build -tag REF -o FILE -platform-binary OS/ARCH=FILE... [-user UID] [-oci DIR] [-digest-file FILE] [-annotation KEY=VALUE...]")
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("tag %q: %w", tag, err)
	}
	idx, err := index(o.platforms, user, o.annotations)
	if err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}

	// The layout is written into a fresh directory (one beside out when no
	// -oci is given) and archived into out.
	dir := o.ociDir
	if dir == "" {
		tmp, err := os.MkdirTemp(filepath.Dir(out), ".oci-layout-")
		if err != nil {
			return err
		}
		defer func() { _ = os.RemoveAll(tmp) }()
		dir = tmp
	} else if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("-oci %s: the directory is not empty", dir)
	}
	if err := writeLayout(dir, ref, idx); err != nil {
		return fmt.Errorf("write the OCI layout %s: %w", dir, err)
	}
	if err := archive(dir, out); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	if o.digestFile != "" {
		if err := os.WriteFile(o.digestFile, []byte(digest.String()+"\n"), 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("image-build: %s %s (%s) -> %s\n", ref, digest, o.platforms.String(), out)
	return nil
}

// index makes the OCI image index of one image per platform binary, each
// image and the index annotated with annotations.
func index(platforms platformBinaries, user int, annotations map[string]string) (v1.ImageIndex, error) {
	var adds []mutate.IndexAddendum
	for _, pb := range platforms {
		layer, config, err := layerOf("", pb.binary, user)
		if err != nil {
			return nil, err
		}
		img, err := image(layer, config, pb.platform.Architecture, true)
		if err != nil {
			return nil, err
		}
		if len(annotations) > 0 {
			img = mutate.Annotations(img, annotations).(v1.Image)
		}
		platform := pb.platform
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &platform}})
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	if len(annotations) > 0 {
		idx = mutate.Annotations(idx, annotations).(v1.ImageIndex)
	}
	return idx, nil
}

// writeLayout writes idx as the one entry of a new OCI image layout, named
// the way BuildKit's OCI exporter names it: the tag as
// org.opencontainers.image.ref.name, the whole reference as
// io.containerd.image.name (the name `ctr images import` gives it).
func writeLayout(dir string, ref name.Tag, idx v1.ImageIndex) error {
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref.TagStr(),
		"io.containerd.image.name":          ref.String(),
	}))
}

// archive writes the directory dir as a tarball at out: entries sorted,
// times fixed, owned by root, so that the same layout gives the same bytes.
func archive(dir, out string) error {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		files = append(files, path)
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(files)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	tw := tar.NewWriter(f)
	for _, path := range files {
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		info, err := os.Stat(path)
		if err != nil {
			return err
		}
		if info.IsDir() {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: rel + "/", Mode: 0o755, ModTime: epoch}); err != nil {
				return err
			}
			continue
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Mode: 0o644, Size: info.Size(), ModTime: epoch}); err != nil {
			return err
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		_, err = io.Copy(tw, src)
		_ = src.Close()
		if err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}
