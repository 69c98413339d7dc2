// Command image-build writes a container image as a tarball that
// `ctr images import` (and `docker load`) read, without Docker: the images
// the real node of the local cluster runs (hack/real-node/images.sh).
//
// Two kinds of image, each a single layer on an empty base:
//
//	image-build -tag docker.io/library/busybox:1.37 -o busybox.tar -busybox /bin/busybox
//	    a static busybox as /bin/busybox and a symlink for each applet it
//	    lists (`busybox --list-full`: /bin/sh, /bin/echo, /usr/bin/env...);
//	    command sh, user root like the upstream image.
//	image-build -tag cnat-controller:v0.1.0 -o controller.tar -binary bin/cnat-controller -user 65532
//	    one static binary as /<its name>, its entrypoint, run as -user.
//
// Both have /etc/passwd and /etc/group (root, nobody 65534, nonroot 65532,
// and -user), a world-writable /tmp, and the platform this command runs on.
//
// The release's multi-platform controller image (make release,
// hack/release.sh): one -platform-binary per platform, each a static binary
// cross-compiled for it, gives an OCI image index of one image per platform,
// written as an OCI image layout (-oci DIR, what `crane push DIR REF`
// pushes) and as the tarball of that layout (-o, an OCI archive that
// `ctr images import`, `skopeo copy oci-archive:` and `docker load` read):
//
//	image-build -tag ghcr.io/programming-kubernetes/cnat-controller:v0.1.0 -user 65532 \
//	    -platform-binary linux/amd64=dist/controller_linux_amd64_v1/cnat-controller \
//	    -platform-binary linux/arm64=dist/controller_linux_arm64_v8.0/cnat-controller \
//	    -annotation org.opencontainers.image.version=v0.1.0 \
//	    -oci dist/cnat-controller-oci -o dist/cnat-controller.oci.tar -digest-file dist/cnat-controller.digest
//
// The index, its manifests and layers have the OCI media types; the digest
// of the index, which names the image in every platform, is printed and
// written to -digest-file.
//
// File times and the creation time are fixed, so the same input gives the
// same image digest.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// epoch is the time of every file and of the image itself: 2000-01-01, not
// the Unix epoch, which some tools print as "unset".
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func main() {
	tag := flag.String("tag", "", "image reference to write, e.g. docker.io/library/busybox:1.37")
	out := flag.String("o", "", "tarball to write (with -platform-binary: the OCI layout as a tarball)")
	busybox := flag.String("busybox", "", "a static busybox binary: build a busybox image")
	binary := flag.String("binary", "", "a static binary: build an image that runs it")
	user := flag.Int("user", 0, "numeric user (and group) the image runs as")
	var multi multiOptions
	flag.Var(&multi.platforms, "platform-binary", "OS/ARCH=FILE, repeated: a static binary for that platform; builds a multi-platform image index")
	flag.StringVar(&multi.ociDir, "oci", "", "with -platform-binary: also write the index as an OCI image layout into this new directory")
	flag.StringVar(&multi.digestFile, "digest-file", "", "with -platform-binary: write the index digest (sha256:...) into this file")
	flag.Var(&multi.annotations, "annotation", "KEY=VALUE, repeated: an annotation of the index and of each image (with -platform-binary)")
	flag.Parse()

	var err error
	if len(multi.platforms) > 0 {
		err = runMulti(*tag, *out, *binary, *busybox, *user, multi)
	} else {
		err = run(*tag, *out, *busybox, *binary, *user, multi)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "image-build: %v\n", err)
		os.Exit(1)
	}
}

func run(tag, out, busybox, binary string, user int, multi multiOptions) error {
	if tag == "" || out == "" || (busybox == "") == (binary == "") || flag.NArg() > 0 ||
		multi.ociDir != "" || multi.digestFile != "" || len(multi.annotations) > 0 {
		return errors.New("usage: image-build -tag REF -o FILE (-busybox FILE | -binary FILE [-user UID])")
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("tag %q: %w", tag, err)
	}
	layer, config, err := layerOf(busybox, binary, user)
	if err != nil {
		return err
	}
	img, err := image(layer, config, runtime.GOARCH, false)
	if err != nil {
		return err
	}
	if err := tarball.WriteToFile(out, ref, img); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("image-build: %s %s -> %s\n", ref, digest, out)
	return nil
}

// layerOf writes the single layer of an image and returns it with the
// image's config: busybox and its applets, or binary as its entrypoint.
func layerOf(busybox, binary string, user int) ([]byte, v1.Config, error) {
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	if err := baseFiles(tw, user); err != nil {
		return nil, v1.Config{}, err
	}
	config := v1.Config{Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}}
	if user != 0 {
		config.User = strconv.Itoa(user) + ":" + strconv.Itoa(user)
	}
	if busybox != "" {
		if err := busyboxFiles(tw, busybox); err != nil {
			return nil, v1.Config{}, err
		}
		config.Cmd = []string{"sh"}
	} else {
		target := "/" + filepath.Base(binary)
		if err := addFile(tw, binary, target); err != nil {
			return nil, v1.Config{}, err
		}
		config.Entrypoint = []string{target}
	}
	if err := tw.Close(); err != nil {
		return nil, v1.Config{}, err
	}
	return layer.Bytes(), config, nil
}

// image makes a single-layer linux image for arch, with Docker's media
// types (what the real node's images have always had) or, with oci, the
// OCI ones (the release's index).
func image(layerTar []byte, config v1.Config, arch string, oci bool) (v1.Image, error) {
	var layerOpts []tarball.LayerOption
	base := empty.Image
	if oci {
		layerOpts = append(layerOpts, tarball.WithMediaType(types.OCILayer))
		base = mutate.ConfigMediaType(mutate.MediaType(base, types.OCIManifestSchema1), types.OCIConfigJSON)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, layerOpts...)
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:   layer,
		History: v1.History{CreatedBy: "hack/image-build", Created: v1.Time{Time: epoch}},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS = "linux"
	cf.Architecture = arch
	cf.Config = config
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	return mutate.CreatedAt(img, v1.Time{Time: epoch})
}

// baseFiles writes what every image has: users, groups and /tmp.
func baseFiles(tw *tar.Writer, user int) error {
	users := []struct {
		name  string
		id    int
		home  string
		shell string
	}{
		{"root", 0, "/root", "/bin/sh"},
		{"nonroot", 65532, "/home/nonroot", "/sbin/nologin"},
		{"nobody", 65534, "/nonexistent", "/sbin/nologin"},
	}
	var passwd, group strings.Builder
	known := false
	for _, u := range users {
		fmt.Fprintf(&passwd, "%s:x:%d:%d:%s:%s:%s\n", u.name, u.id, u.id, u.name, u.home, u.shell)
		fmt.Fprintf(&group, "%s:x:%d:\n", u.name, u.id)
		known = known || u.id == user
	}
	if !known {
		fmt.Fprintf(&passwd, "user%d:x:%d:%d::/tmp:/sbin/nologin\n", user, user, user)
		fmt.Fprintf(&group, "user%d:x:%d:\n", user, user)
	}
	for _, d := range []struct {
		name string
		mode int64
	}{{"etc", 0o755}, {"root", 0o700}, {"tmp", 0o1777}} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d.name + "/", Mode: d.mode, ModTime: epoch}); err != nil {
			return err
		}
	}
	if err := addBytes(tw, "etc/passwd", []byte(passwd.String()), 0o644); err != nil {
		return err
	}
	return addBytes(tw, "etc/group", []byte(group.String()), 0o644)
}

// busyboxFiles writes the busybox binary as /bin/busybox and a symlink to it
// at the path of each applet, the layout of `busybox --install`.
func busyboxFiles(tw *tar.Writer, busybox string) error {
	list, err := exec.Command(busybox, "--list-full").Output()
	if err != nil {
		return fmt.Errorf("%s --list-full: %w", busybox, err)
	}
	for _, dir := range []string{"bin", "sbin", "usr", "usr/bin", "usr/sbin"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755, ModTime: epoch}); err != nil {
			return err
		}
	}
	if err := addFile(tw, busybox, "/bin/busybox"); err != nil {
		return err
	}
	for _, applet := range strings.Fields(string(list)) {
		// Applets outside the PATH directories (linuxrc, for an initramfs)
		// have no place in a container.
		switch dir := path.Dir(applet); {
		case applet == "bin/busybox":
			continue
		case dir != "bin" && dir != "sbin" && dir != "usr/bin" && dir != "usr/sbin":
			continue
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: applet, Linkname: "/bin/busybox", Mode: 0o777, ModTime: epoch}); err != nil {
			return err
		}
	}
	return nil
}

// addFile copies an executable from the host into the layer at target.
func addFile(tw *tar.Writer, source, target string) error {
	data, err := os.ReadFile(source)
	if err != nil {
		return err
	}
	return addBytes(tw, strings.TrimPrefix(target, "/"), data, 0o755)
}

func addBytes(tw *tar.Writer, name string, data []byte, mode int64) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: epoch}); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}
