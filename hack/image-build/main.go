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
)

// epoch is the time of every file and of the image itself: 2000-01-01, not
// the Unix epoch, which some tools print as "unset".
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func main() {
	tag := flag.String("tag", "", "image reference to write, e.g. docker.io/library/busybox:1.37")
	out := flag.String("o", "", "tarball to write")
	busybox := flag.String("busybox", "", "a static busybox binary: build a busybox image")
	binary := flag.String("binary", "", "a static binary: build an image that runs it")
	user := flag.Int("user", 0, "numeric user (and group) the image runs as")
	flag.Parse()

	if err := run(*tag, *out, *busybox, *binary, *user); err != nil {
		fmt.Fprintf(os.Stderr, "image-build: %v\n", err)
		os.Exit(1)
	}
}

func run(tag, out, busybox, binary string, user int) error {
	if tag == "" || out == "" || (busybox == "") == (binary == "") || flag.NArg() > 0 {
		return errors.New("usage: image-build -tag REF -o FILE (-busybox FILE | -binary FILE [-user UID])")
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("tag %q: %w", tag, err)
	}

	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	if err := baseFiles(tw, user); err != nil {
		return err
	}
	config := v1.Config{Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}}
	if user != 0 {
		config.User = strconv.Itoa(user) + ":" + strconv.Itoa(user)
	}
	if busybox != "" {
		if err := busyboxFiles(tw, busybox); err != nil {
			return err
		}
		config.Cmd = []string{"sh"}
	} else {
		target := "/" + filepath.Base(binary)
		if err := addFile(tw, binary, target); err != nil {
			return err
		}
		config.Entrypoint = []string{target}
	}
	if err := tw.Close(); err != nil {
		return err
	}

	img, err := image(layer.Bytes(), config)
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

// image makes a single-layer image for this platform.
func image(layerTar []byte, config v1.Config) (v1.Image, error) {
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{
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
	cf.Architecture = runtime.GOARCH
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
