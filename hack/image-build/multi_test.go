package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// TestMultiPlatform: one image per -platform-binary, in an OCI image index
// written as a layout and a tarball; the same binaries give the same digest.
func TestMultiPlatform(t *testing.T) {
	dir := t.TempDir()
	var platforms platformBinaries
	for _, arch := range []string{"amd64", "arm64"} {
		bin := filepath.Join(dir, arch, "cnat-controller")
		if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, []byte("a binary for "+arch), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := platforms.Set("linux/" + arch + "=" + bin); err != nil {
			t.Fatal(err)
		}
	}
	if err := platforms.Set("linux/amd64=" + filepath.Join(dir, "other")); err == nil {
		t.Error("a platform given twice was accepted")
	}
	if err := platforms.Set("windows/amd64=" + filepath.Join(dir, "other")); err == nil {
		t.Error("a windows image was accepted")
	}

	o := multiOptions{platforms: platforms, ociDir: filepath.Join(dir, "oci"), digestFile: filepath.Join(dir, "digest"), annotations: keyValues{"org.opencontainers.image.version": "v9.9.9"}}
	out := filepath.Join(dir, "image.oci.tar")
	if err := runMulti("ghcr.io/programming-kubernetes/cnat-controller:v9.9.9", out, "", "", 65532, o); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(o.digestFile)
	if err != nil {
		t.Fatal(err)
	}
	digest := strings.TrimSpace(string(raw))

	l, err := layout.ImageIndexFromPath(o.ociDir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := l.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Manifests) != 1 || top.Manifests[0].Digest.String() != digest || top.Manifests[0].MediaType != types.OCIImageIndex {
		t.Fatalf("layout index %+v, want one OCI image index %s", top.Manifests, digest)
	}
	if got := top.Manifests[0].Annotations["io.containerd.image.name"]; got != "ghcr.io/programming-kubernetes/cnat-controller:v9.9.9" {
		t.Errorf("io.containerd.image.name %q", got)
	}
	idx, err := l.ImageIndex(top.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Index(idx); err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.Annotations["org.opencontainers.image.version"] != "v9.9.9" {
		t.Errorf("index annotations %v", m.Annotations)
	}
	if len(m.Manifests) != 2 {
		t.Fatalf("%d images, want 2", len(m.Manifests))
	}
	for i, arch := range []string{"amd64", "arm64"} {
		d := m.Manifests[i]
		if d.Platform == nil || d.Platform.OS != "linux" || d.Platform.Architecture != arch || d.MediaType != types.OCIManifestSchema1 {
			t.Errorf("image %d: %+v", i, d)
			continue
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Architecture != arch || cf.Config.User != "65532:65532" || len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != "/cnat-controller" {
			t.Errorf("image %s: %s, user %q, entrypoint %v", arch, cf.Architecture, cf.Config.User, cf.Config.Entrypoint)
		}
		layers, err := img.Layers()
		if err != nil {
			t.Fatal(err)
		}
		if mt, _ := layers[0].MediaType(); mt != types.OCILayer {
			t.Errorf("image %s: layer media type %s", arch, mt)
		}
	}
	if info, err := os.Stat(out); err != nil || info.Size() == 0 {
		t.Errorf("the tarball %s: %v", out, err)
	}

	// Again, into new files: the same digest and the same tarball.
	o2 := o
	o2.ociDir, o2.digestFile = filepath.Join(dir, "oci2"), filepath.Join(dir, "digest2")
	out2 := filepath.Join(dir, "image2.oci.tar")
	if err := runMulti("ghcr.io/programming-kubernetes/cnat-controller:v9.9.9", out2, "", "", 65532, o2); err != nil {
		t.Fatal(err)
	}
	raw2, _ := os.ReadFile(o2.digestFile)
	if string(raw2) != string(raw) {
		t.Errorf("second build %s, first %s", raw2, raw)
	}
	tar1, _ := os.ReadFile(out)
	tar2, _ := os.ReadFile(out2)
	if string(tar1) != string(tar2) {
		t.Error("the two tarballs differ")
	}
	// A layout directory that is not empty is refused.
	if err := runMulti("ghcr.io/programming-kubernetes/cnat-controller:v9.9.9", out2, "", "", 65532, o2); err == nil {
		t.Error("wrote into a non-empty -oci directory")
	}
}
