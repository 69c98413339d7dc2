package manifests

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
)

// AnnotationSource, on an ApplySet parent, names the overlay the set was last
// applied from; an apply from another would replace what that one installed.
const AnnotationSource = "cnatctl.cnat.programming-kubernetes.info/source"

// OverlaySource names an overlay directory the same on every checkout: its
// path in its git work tree, or its absolute path outside one.
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
// directory's name and a hash of its OverlaySource.
func DefaultSetName(dir string) string {
	sum := sha256.Sum256([]byte(OverlaySource(dir)))
	return SetNameFromDir(dir) + "-" + hex.EncodeToString(sum[:4])
}

// checkSource refuses to apply the set from another overlay than the one
// recorded, if any, unless change.
func (s *ApplySet) checkSource(recorded string, change bool) error {
	if recorded == "" || s.Source == "" || recorded == s.Source || change {
		return nil
	}
	return fmt.Errorf("ApplySet parent %s records that the set was applied from %q, and this overlay is %q: "+
		"applying it would replace what that overlay installed (and, with --prune, delete it); "+
		"choose another --name, or pass --change-source if this overlay replaces that one", s.ParentRef(), recorded, s.Source)
}
