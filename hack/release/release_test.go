package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"

	"github.com/programming-kubernetes/cnat/internal/manifests"
)

const (
	testImage  = "ghcr.io/programming-kubernetes/cnat-controller"
	testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	overlay    = "../../kustomize/overlays/production"
)

// TestInstallYAMLPinnedByDigest: install.yaml deploys the controller image
// by the digest it is given, and by no tag.
func TestInstallYAMLPinnedByDigest(t *testing.T) {
	data, err := installYAML(overlay, testImage, testDigest, "v9.9.9", "abc")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkInstallYAML(data, testImage, testDigest); err != nil {
		t.Error(err)
	}
	if !bytes.Contains(data, []byte("image: "+testImage+"@"+testDigest+"\n")) {
		t.Errorf("install.yaml does not deploy %s@%s", testImage, testDigest)
	}
	if bytes.Contains(data, []byte(testImage+":")) {
		t.Errorf("install.yaml names %s by a tag", testImage)
	}
	if !bytes.HasPrefix(data, []byte("# cnat v9.9.9 (commit abc)")) {
		t.Errorf("install.yaml's header: %q", strings.SplitN(string(data), "\n", 2)[0])
	}
	// Everything the overlay has is there.
	want, err := manifests.Build(t.Context(), overlay)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(data), "\n---\n") + 1; got != len(want) {
		t.Errorf("install.yaml has %d objects, the overlay %d", got, len(want))
	}
}

// TestCheckInstallYAMLRefuses: the overlay as it is (the image by its tag),
// or pinned by another digest, fails the check.
func TestCheckInstallYAMLRefuses(t *testing.T) {
	byTag, err := manifests.BuildYAML(t.Context(), overlay)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkInstallYAML(byTag, testImage, testDigest); err == nil {
		t.Error("the overlay with the image by tag passed")
	}
	other := strings.Replace(testDigest, "0123", "3210", 1)
	pinned, err := installYAML(overlay, testImage, other, "v9.9.9", "abc")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkInstallYAML(pinned, testImage, testDigest); err == nil {
		t.Error("install.yaml pinned by another digest passed")
	}
	if _, err := installYAML(overlay, testImage, "sha256:abc", "v9.9.9", "abc"); err == nil {
		t.Error("a short digest was accepted")
	}
	if _, err := installYAML(overlay, testImage, strings.ToUpper(testDigest), "v9.9.9", "abc"); err == nil {
		t.Error("an upper-case digest was accepted")
	}
}

// TestCheckLayout: the image index of the layout, for both platforms, with
// the digest given, passes; another digest or a missing platform fails.
func TestCheckLayout(t *testing.T) {
	both := writeTestLayout(t, "amd64", "arm64")
	if err := checkLayout(both.dir, both.digest); err != nil {
		t.Error(err)
	}
	if err := checkLayout(both.dir, testDigest); err == nil {
		t.Error("another digest passed")
	}
	one := writeTestLayout(t, "amd64")
	if err := checkLayout(one.dir, one.digest); err == nil {
		t.Error("an index without linux/arm64 passed")
	}
}

type testLayout struct{ dir, digest string }

func writeTestLayout(t *testing.T, archs ...string) testLayout {
	t.Helper()
	var adds []mutate.IndexAddendum
	for _, arch := range archs {
		img, err := random.Image(64, 1)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture = "linux", arch
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			t.Fatal(err)
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	idx := mutate.AppendManifests(empty.Index, adds...)
	dir := t.TempDir()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendIndex(idx); err != nil {
		t.Fatal(err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return testLayout{dir: dir, digest: d.String()}
}

// TestVerifyKrew: a manifest with each platform's archive and its sha256
// passes; a changed archive, a URL of another release, a missing platform
// or an archive without kubectl-cnat fails.
func TestVerifyKrew(t *testing.T) {
	t.Run("good", func(t *testing.T) {
		dist, sums := writeTestDist(t, nil)
		if err := verifyKrew(dist, "v9.9.9", sums); err != nil {
			t.Error(err)
		}
	})
	t.Run("changed archive", func(t *testing.T) {
		dist, sums := writeTestDist(t, nil)
		if err := os.WriteFile(filepath.Join(dist, "cnatctl_9.9.9_linux_arm64.tar.gz"), []byte("changed"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := verifyKrew(dist, "v9.9.9", sums); err == nil {
			t.Error("passed")
		}
	})
	t.Run("another release", func(t *testing.T) {
		dist, sums := writeTestDist(t, nil)
		if err := verifyKrew(dist, "v9.9.8", sums); err == nil {
			t.Error("passed")
		}
	})
	t.Run("missing platform", func(t *testing.T) {
		dist, sums := writeTestDist(t, func(m string) string {
			i := strings.Index(m, "  - selector:\n      matchLabels:\n        os: darwin\n        arch: amd64")
			j := strings.Index(m[i+1:], "  - selector:") + i + 1
			return m[:i] + m[j:]
		})
		if err := verifyKrew(dist, "v9.9.9", sums); err == nil {
			t.Error("passed")
		}
	})
	t.Run("no plugin name", func(t *testing.T) {
		dist, sums := writeTestDist(t, func(m string) string { return strings.ReplaceAll(m, "bin: cnatctl\n", "bin: cnat\n") })
		if err := verifyKrew(dist, "v9.9.9", sums); err == nil {
			t.Error("passed")
		}
	})
}

// writeTestDist writes the cnatctl archives of release v9.9.9 and a krew
// manifest for them (changed by edit, when given) into a new directory.
func writeTestDist(t *testing.T, edit func(string) string) (string, map[string]string) {
	t.Helper()
	dist := t.TempDir()
	sums := map[string]string{}
	var m strings.Builder
	m.WriteString("apiVersion: krew.googlecontainertools.github.com/v1alpha2\nkind: Plugin\nmetadata:\n  name: cnat\nspec:\n  version: v9.9.9\n  platforms:\n")
	for _, platform := range cliPlatforms {
		goos, arch, _ := strings.Cut(platform, "/")
		bin, plugin, name := "cnatctl", "kubectl-cnat", fmt.Sprintf("cnatctl_9.9.9_%s_%s.tar.gz", goos, arch)
		if goos == "windows" {
			bin, plugin, name = "cnatctl.exe", "kubectl-cnat.exe", fmt.Sprintf("cnatctl_9.9.9_%s_%s.zip", goos, arch)
		}
		path := filepath.Join(dist, name)
		writeTestArchive(t, path, bin, plugin)
		sum, err := fileSHA256(path)
		if err != nil {
			t.Fatal(err)
		}
		sums[name] = sum
		fmt.Fprintf(&m, "  - selector:\n      matchLabels:\n        os: %s\n        arch: %s\n    uri: https://github.com/programming-kubernetes/cnat/releases/download/v9.9.9/%s\n    sha256: %s\n    bin: %s\n", goos, arch, name, sum, bin)
	}
	manifest := m.String()
	if edit != nil {
		manifest = edit(manifest)
	}
	if err := os.WriteFile(filepath.Join(dist, "cnat.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	return dist, sums
}

func writeTestArchive(t *testing.T, path string, names ...string) {
	t.Helper()
	var buf bytes.Buffer
	if strings.HasSuffix(path, ".zip") {
		zw := zip.NewWriter(&buf)
		for _, n := range names {
			w, err := zw.Create(n)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = w.Write([]byte(path))
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	} else {
		gz := gzip.NewWriter(&buf)
		tw := tar.NewWriter(gz)
		for _, n := range names {
			if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o755, Size: int64(len(path))}); err != nil {
				t.Fatal(err)
			}
			_, _ = tw.Write([]byte(path))
		}
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := gz.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
