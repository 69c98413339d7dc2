package main

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/validate"
	"sigs.k8s.io/yaml"

	"github.com/programming-kubernetes/cnat/hack/internal/images"
)

// The platforms of a release.
var (
	imagePlatforms = []string{"linux/amd64", "linux/arm64"}
	cliPlatforms   = []string{"darwin/amd64", "darwin/arm64", "linux/amd64", "linux/arm64", "windows/amd64", "windows/arm64"}
)

// releaseURL is where the krew manifest says each archive is: the GitHub
// release of the tag.
var releaseURL = regexp.MustCompile(`^https://github\.com/programming-kubernetes/cnat/releases/download/(v[0-9]+\.[0-9]+\.[0-9]+)/([^/]+)$`)

func verifyCommand(args []string) error {
	fs := flag.NewFlagSet("verify", flag.ExitOnError)
	dist := fs.String("dist", "dist", "the release directory")
	image := fs.String("image", "", "the controller image's name, without tag")
	tag := fs.String("tag", "", "the tag the release is published under (VERSION)")
	_ = fs.Parse(args)
	if *image == "" || *tag == "" || fs.NArg() > 0 {
		usage()
	}
	if err := verify(*dist, *image, *tag); err != nil {
		return err
	}
	fmt.Printf("release verify: %s: checksums, image index, install.yaml and krew manifest agree\n", *dist)
	return nil
}

// verify checks the release in dist; see the package documentation.
func verify(dist, image, tag string) error {
	sums, err := verifyChecksums(dist)
	if err != nil {
		return err
	}
	digest, err := verifyImage(dist)
	if err != nil {
		return err
	}
	install, err := os.ReadFile(filepath.Join(dist, "install.yaml"))
	if err != nil {
		return err
	}
	if err := checkInstallYAML(install, image, digest); err != nil {
		return fmt.Errorf("install.yaml: %w", err)
	}
	return verifyKrew(dist, tag, sums)
}

// notAssets are the files of dist/ that are not released: goreleaser's
// metadata, hack/release.sh's notes for itself, checksums.txt and its
// signature.
func notAsset(name string) bool {
	switch name {
	case "metadata.json", "artifacts.json", "config.yaml", "version", "commit":
		return true
	}
	return strings.HasPrefix(name, "checksums.txt")
}

// verifyChecksums checks that checksums.txt lists every asset of dist once,
// with its SHA-256, and returns the sums by file name.
func verifyChecksums(dist string) (map[string]string, error) {
	f, err := os.Open(filepath.Join(dist, "checksums.txt"))
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	sums := map[string]string{}
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		sum, name, ok := strings.Cut(scanner.Text(), "  ")
		if !ok || len(sum) != 64 || name == "" || strings.Contains(name, "/") {
			return nil, fmt.Errorf("checksums.txt: %q is not <sha256>  <file>", scanner.Text())
		}
		if _, dup := sums[name]; dup {
			return nil, fmt.Errorf("checksums.txt: %s listed twice", name)
		}
		got, err := fileSHA256(filepath.Join(dist, name))
		if err != nil {
			return nil, fmt.Errorf("checksums.txt: %w", err)
		}
		if got != sum {
			return nil, fmt.Errorf("checksums.txt: %s has SHA-256 %s, not %s", name, got, sum)
		}
		sums[name] = sum
	}
	if err := scanner.Err(); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dist)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.Type().IsRegular() && !notAsset(e.Name()) {
			if _, ok := sums[e.Name()]; !ok {
				return nil, fmt.Errorf("checksums.txt does not list %s", e.Name())
			}
		}
	}
	return sums, nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// onlyFile returns the one file of dist matching pattern.
func onlyFile(dist, pattern string) (string, error) {
	matches, err := filepath.Glob(filepath.Join(dist, pattern))
	if err != nil {
		return "", err
	}
	if len(matches) != 1 {
		return "", fmt.Errorf("%d files match %s in %s, want one", len(matches), pattern, dist)
	}
	return matches[0], nil
}

// verifyImage checks the image: the OCI layout tarball holds one image
// index, valid (every blob there, of its digest), with one image for each
// of imagePlatforms, whose digest is the one of the digest file. It returns
// that digest.
func verifyImage(dist string) (string, error) {
	digestFile, err := onlyFile(dist, "cnat-controller_*_image.digest")
	if err != nil {
		return "", err
	}
	raw, err := os.ReadFile(digestFile)
	if err != nil {
		return "", err
	}
	digest := strings.TrimSpace(string(raw))
	if err := checkDigest(digest); err != nil {
		return "", fmt.Errorf("%s: %w", filepath.Base(digestFile), err)
	}
	archive, err := onlyFile(dist, "cnat-controller_*_image.oci.tar")
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "release-verify-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := untar(archive, dir); err != nil {
		return "", fmt.Errorf("%s: %w", filepath.Base(archive), err)
	}
	if err := checkLayout(dir, digest); err != nil {
		return "", fmt.Errorf("%s: %w", filepath.Base(archive), err)
	}
	return digest, nil
}

// checkLayout checks the OCI layout in dir: one entry, the image index of
// digest, valid, for imagePlatforms.
func checkLayout(dir, digest string) error {
	l, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return err
	}
	m, err := l.IndexManifest()
	if err != nil {
		return err
	}
	if len(m.Manifests) != 1 {
		return fmt.Errorf("the layout has %d entries, want the one image index", len(m.Manifests))
	}
	if got := m.Manifests[0].Digest.String(); got != digest {
		return fmt.Errorf("the layout's image index is %s, the digest file says %s", got, digest)
	}
	h, err := v1.NewHash(digest)
	if err != nil {
		return err
	}
	idx, err := l.ImageIndex(h)
	if err != nil {
		return err
	}
	if err := validate.Index(idx); err != nil {
		return fmt.Errorf("image index %s: %w", digest, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	var platforms []string
	for _, d := range im.Manifests {
		if d.Platform == nil {
			return fmt.Errorf("image %s has no platform", d.Digest)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			return err
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return err
		}
		if cf.OS != d.Platform.OS || cf.Architecture != d.Platform.Architecture {
			return fmt.Errorf("image %s is %s/%s, the index says %s", d.Digest, cf.OS, cf.Architecture, d.Platform)
		}
		platforms = append(platforms, d.Platform.String())
	}
	sort.Strings(platforms)
	if !slices.Equal(platforms, imagePlatforms) {
		return fmt.Errorf("image index %s is for %v, want %v", digest, platforms, imagePlatforms)
	}
	return nil
}

func untar(archive, dir string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(target, filepath.Clean(dir)+string(filepath.Separator)) {
			return fmt.Errorf("%s is outside the archive", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			out, err := os.Create(target)
			if err != nil {
				return err
			}
			_, err = io.Copy(out, tr)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: unexpected entry type %c", h.Name, h.Typeflag)
		}
	}
}

// checkInstallYAML checks rendered manifests: the controller's Deployment
// runs image@digest, and no container anywhere runs image by a tag alone
// (or by another digest).
func checkInstallYAML(data []byte, image, digest string) error {
	want := image + "@" + digest
	controllers := 0
	for i, doc := range bytes.Split(data, []byte("\n---\n")) {
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return fmt.Errorf("document %d: %w", i+1, err)
		}
		if obj == nil {
			continue
		}
		kind, _ := obj["kind"].(string)
		meta, _ := obj["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		for _, c := range images.Containers(obj) {
			where := fmt.Sprintf("%s %s container %s", kind, name, c.Name)
			if kind == "Deployment" && name == "cnat-controller" && c.Name == "manager" {
				controllers++
				if c.Image != want {
					return fmt.Errorf("%s: image %q, want %q", where, c.Image, want)
				}
			}
			if (strings.HasPrefix(c.Image, image+":") || strings.HasPrefix(c.Image, image+"@")) && c.Image != want {
				return fmt.Errorf("%s: image %q, want %q", where, c.Image, want)
			}
		}
	}
	if controllers != 1 {
		return fmt.Errorf("%d controller Deployments (cnat-controller, container manager), want 1", controllers)
	}
	return nil
}

// krewManifest is what verifyKrew reads of a krew plugin manifest.
type krewManifest struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version   string `json:"version"`
		Platforms []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			SHA256 string `json:"sha256"`
			Bin    string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

// verifyKrew checks cnat.yaml: a platform for each of cliPlatforms, each
// at the release URL of tag, with the SHA-256 of the archive in dist (and
// in checksums.txt), the archive holding the binary it names and
// kubectl-cnat; and every cnatctl archive of dist is in it.
func verifyKrew(dist, tag string, sums map[string]string) error {
	raw, err := os.ReadFile(filepath.Join(dist, "cnat.yaml"))
	if err != nil {
		return err
	}
	var m krewManifest
	if err := yaml.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("cnat.yaml: %w", err)
	}
	if m.Kind != "Plugin" || m.Metadata.Name != "cnat" {
		return fmt.Errorf("cnat.yaml: a %s named %q, want the Plugin cnat", m.Kind, m.Metadata.Name)
	}
	var platforms, archives []string
	for _, p := range m.Spec.Platforms {
		platform := p.Selector.MatchLabels["os"] + "/" + p.Selector.MatchLabels["arch"]
		platforms = append(platforms, platform)
		match := releaseURL.FindStringSubmatch(p.URI)
		if match == nil {
			return fmt.Errorf("cnat.yaml: %s: %s is not %s", platform, p.URI, releaseURL)
		}
		if match[1] != tag {
			return fmt.Errorf("cnat.yaml: %s: %s is not of the release %s", platform, p.URI, tag)
		}
		file := match[2]
		archives = append(archives, file)
		got, err := fileSHA256(filepath.Join(dist, file))
		if err != nil {
			return fmt.Errorf("cnat.yaml: %s: %w", platform, err)
		}
		if p.SHA256 != got {
			return fmt.Errorf("cnat.yaml: %s: sha256 %s, but %s has %s", platform, p.SHA256, file, got)
		}
		if sums[file] != got {
			return fmt.Errorf("cnat.yaml: %s: %s is not in checksums.txt with its sha256", platform, file)
		}
		plugin := "kubectl-cnat"
		if p.Selector.MatchLabels["os"] == "windows" {
			plugin += ".exe"
		}
		if err := archiveHas(filepath.Join(dist, file), p.Bin, plugin); err != nil {
			return fmt.Errorf("cnat.yaml: %s: %w", platform, err)
		}
	}
	sort.Strings(platforms)
	if !slices.Equal(platforms, cliPlatforms) {
		return fmt.Errorf("cnat.yaml: platforms %v, want %v", platforms, cliPlatforms)
	}
	tgz, err := filepath.Glob(filepath.Join(dist, "cnatctl_*.tar.gz"))
	if err != nil {
		return err
	}
	zips, err := filepath.Glob(filepath.Join(dist, "cnatctl_*.zip"))
	if err != nil {
		return err
	}
	for _, path := range append(tgz, zips...) {
		if !slices.Contains(archives, filepath.Base(path)) {
			return fmt.Errorf("cnat.yaml: no platform has %s", filepath.Base(path))
		}
	}
	return nil
}

// archiveHas checks that a .tar.gz or .zip has each of names at its top.
func archiveHas(path string, names ...string) error {
	var entries []string
	switch {
	case strings.HasSuffix(path, ".zip"):
		r, err := zip.OpenReader(path)
		if err != nil {
			return err
		}
		defer func() { _ = r.Close() }()
		for _, f := range r.File {
			entries = append(entries, f.Name)
		}
	case strings.HasSuffix(path, ".tar.gz"):
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		gz, err := gzip.NewReader(f)
		if err != nil {
			return err
		}
		tr := tar.NewReader(gz)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
			entries = append(entries, h.Name)
		}
	default:
		return fmt.Errorf("%s is neither .tar.gz nor .zip", filepath.Base(path))
	}
	for _, name := range names {
		if name == "" || !slices.Contains(entries, name) {
			return fmt.Errorf("%s has no %q (it has %v)", filepath.Base(path), name, entries)
		}
	}
	return nil
}
