package cli

import (
	"context"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/programming-kubernetes/cnat/internal/buildinfo"
	"github.com/programming-kubernetes/cnat/internal/manifests"
)

// setFlags are the flags build, diff and apply share: which overlay, and
// which ApplySet it is.
type setFlags struct {
	dir                string
	name               string
	inventoryNamespace string
}

func (s *setFlags) addDir(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&s.dir, "kustomize", "k", "", "the kustomization directory to render (required), e.g. kustomize/overlays/local")
	_ = cmd.MarkFlagRequired("kustomize")
	_ = cmd.MarkFlagDirname("kustomize")
}

func (s *setFlags) addSet(cmd *cobra.Command) {
	cmd.Flags().StringVar(&s.name, "name", "", "name of the ApplySet (default: the overlay directory's name and a hash of its path in its git repository, e.g. \"production-1a2b3c4d\"); its parent is the Secret applyset-cnat-<name>")
	cmd.Flags().StringVar(&s.inventoryNamespace, "inventory-namespace", manifests.DefaultInventoryNamespace, "namespace of the ApplySet's parent Secret")
}

// load renders the overlay and connects to the cluster as the set: what
// diff and apply start with.
func (s *setFlags) load(ctx context.Context, flags *genericclioptions.ConfigFlags, out io.Writer) ([]*unstructured.Unstructured, *manifests.Applier, error) {
	objects, err := manifests.Build(ctx, s.dir)
	if err != nil {
		return nil, nil, err
	}
	name := s.name
	if name == "" {
		name = manifests.DefaultSetName(s.dir)
	}
	set, err := manifests.NewApplySet(name, s.inventoryNamespace, buildinfo.Version())
	if err != nil {
		return nil, nil, err
	}
	set.Source = manifests.OverlaySource(s.dir)
	cfg, err := restConfig(flags)
	if err != nil {
		return nil, nil, err
	}
	ns, err := namespace(flags)
	if err != nil {
		return nil, nil, err
	}
	a, err := manifests.NewApplier(cfg, manifests.Options{Set: set, DefaultNamespace: ns, Out: out})
	return objects, a, err
}

const setHelp = `The objects form an ApplySet (KEP-3659): each is labelled
applyset.kubernetes.io/part-of=<id>, and a parent Secret
applyset-cnat-<name> in --inventory-namespace (default "default", which every
cluster has and no set owns) records their kinds and namespaces, the overlay
they came from (its path in its git repository) and cnatctl's version.
kubectl reads it: kubectl get secrets -A -l applyset.kubernetes.io/id.
Without --name, the set is named after the overlay's directory and a hash of
its path, so two overlays called "production" are two sets. An apply from
another overlay than the one the parent records is refused unless
--change-source is given. A Lease of the parent's name, beside it, is held
while an apply runs: a second apply of the set waits for it (at most
--timeout) instead of running at the same time.`
