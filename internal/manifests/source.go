package manifests

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
)

// AnnotationSource, on an ApplySet parent, names the overlay the set was
// last applied from (OverlaySource). An apply from another overlay is
// refused unless told otherwise: it would replace, and with --prune delete,
// what that overlay installed.
const AnnotationSource = "cnatctl.cnat.programming-kubernetes.info/source"

// OverlaySource names an overlay directory the same on every checkout of its
// repository: its path relative to the root of the git work tree that holds
// it, or its absolute path outside one.
func OverlaySource(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return filepath.ToSlash(filepath.Clean(dir))
	}
	for root := abs; ; root = filepath.Dir(root) {
		if _, err := os.Stat(filepath.Join(root, ".git")); err == nil {
			if rel, err := filepath.Rel(root, abs); err == nil {
				return filepath.ToSlash(rel)
			}
			break
		}
		if filepath.Dir(root) == root {
			break
		}
	}
	return filepath.ToSlash(abs)
}

// DefaultSetName is the set name of an overlay applied without --name: its
// directory's name and a hash of its OverlaySource, so that two overlays
// that merely share a directory name are two sets
// (kustomize/overlays/production gives "production-" and 8 hex digits).
func DefaultSetName(dir string) string {
	sum := sha256.Sum256([]byte(OverlaySource(dir)))
	return SetNameFromDir(dir) + "-" + hex.EncodeToString(sum[:4])
}

// checkSource refuses to apply the set from another overlay than the one
// its parent records (recorded; none for a new set or one written by an
// older cnatctl), unless change says the user means it.
func (s *ApplySet) checkSource(recorded string, change bool) error {
	if recorded == "" || s.Source == "" || recorded == s.Source || change {
		return nil
	}
	return fmt.Errorf("ApplySet parent %s records that the set was applied from %q, and this overlay is %q: "+
		"applying it would replace what that overlay installed (and, with --prune, delete it); "+
		"choose another --name, or pass --change-source if this overlay replaces that one", s.ParentRef(), recorded, s.Source)
}
