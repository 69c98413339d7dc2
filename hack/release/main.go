// Command release is the Go half of hack/release.sh (make release, make
// release-verify):
//
//	release install-yaml -overlay kustomize/overlays/production \
//	    -image ghcr.io/programming-kubernetes/cnat-controller -digest sha256:... \
//	    -version v0.1.0 -commit <sha> -o dist/install.yaml
//	        renders the overlay as cnatctl does (internal/manifests) with the
//	        controller image pinned by digest, the way kustomize's images
//	        transformer pins it (name@sha256:..., the tag dropped).
//	release verify -dist dist -image ghcr.io/programming-kubernetes/cnat-controller
//	        checks a release in dist/: checksums.txt covers every asset and
//	        matches it; the OCI layout tarball holds a valid image index for
//	        linux/amd64 and linux/arm64 whose digest is the digest file's and
//	        the one install.yaml deploys; install.yaml deploys no image by a
//	        tag alone; the krew manifest has every platform archive at its
//	        release URL with its SHA-256, and each archive holds the binary
//	        the manifest names and kubectl-cnat.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/programming-kubernetes/cnat/internal/manifests"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "install-yaml":
		err = installYAMLCommand(os.Args[2:])
	case "verify":
		err = verifyCommand(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "release %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: release install-yaml -overlay DIR -image NAME -digest sha256:... -version V -commit C -o FILE\n       release verify -dist DIR -image NAME")
	os.Exit(2)
}

func installYAMLCommand(args []string) error {
	fs := flag.NewFlagSet("install-yaml", flag.ExitOnError)
	overlay := fs.String("overlay", "kustomize/overlays/production", "the overlay to render")
	image := fs.String("image", "", "the controller image's name, without tag")
	digest := fs.String("digest", "", "the digest to pin it by (sha256:...)")
	version := fs.String("version", "", "the release, for the header")
	commit := fs.String("commit", "", "the commit, for the header")
	out := fs.String("o", "", "the file to write")
	_ = fs.Parse(args)
	if *image == "" || *digest == "" || *out == "" || fs.NArg() > 0 {
		usage()
	}
	data, err := installYAML(*overlay, *image, *digest, *version, *commit)
	if err != nil {
		return err
	}
	return os.WriteFile(*out, data, 0o644)
}

// installYAML renders overlay through a kustomization that has it as its
// one resource and pins image by digest, and puts a header on it.
func installYAML(overlay, image, digest, version, commit string) ([]byte, error) {
	if err := checkDigest(digest); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(overlay)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "install-yaml-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	rel, err := filepath.Rel(dir, abs)
	if err != nil {
		return nil, err
	}
	kustomization := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - %s
images:
  - name: %s
    digest: %s
`, filepath.ToSlash(rel), image, digest)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		return nil, err
	}
	body, err := manifests.BuildYAML(context.Background(), dir)
	if err != nil {
		return nil, err
	}
	header := fmt.Sprintf(`# cnat %s (commit %s): %s, the controller image pinned by digest.
# Needs cert-manager in the cluster. Install or upgrade with
#   kubectl apply --server-side -f install.yaml
`, version, commit, filepath.ToSlash(overlay))
	if err := checkInstallYAML(body, image, digest); err != nil {
		return nil, fmt.Errorf("rendered %s: %w", overlay, err)
	}
	return append([]byte(header), body...), nil
}

func checkDigest(digest string) error {
	const prefix = "sha256:"
	if len(digest) != len(prefix)+64 || digest[:len(prefix)] != prefix {
		return fmt.Errorf("digest %q is not sha256: and 64 hex digits", digest)
	}
	for _, c := range digest[len(prefix):] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return fmt.Errorf("digest %q is not sha256: and 64 hex digits", digest)
		}
	}
	return nil
}
