package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"

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
	cmd.Flags().StringVar(&s.name, "name", "", "name of the ApplySet (default: the overlay directory's name, e.g. \"local\"); its parent is the Secret applyset-cnat-<name>")
	cmd.Flags().StringVar(&s.inventoryNamespace, "inventory-namespace", manifests.DefaultInventoryNamespace, "namespace of the ApplySet's parent Secret")
}

// load renders the overlay and connects to the cluster as the set: what
// diff and apply start with.
func (s *setFlags) load(flags *genericclioptions.ConfigFlags, out io.Writer) ([]*unstructured.Unstructured, *manifests.Applier, error) {
	objects, err := manifests.Build(s.dir)
	if err != nil {
		return nil, nil, err
	}
	name := s.name
	if name == "" {
		name = manifests.SetNameFromDir(s.dir)
	}
	set, err := manifests.NewApplySet(name, s.inventoryNamespace, Version())
	if err != nil {
		return nil, nil, err
	}
	cfg, err := restConfig(flags)
	if err != nil {
		return nil, nil, err
	}
	ns, err := namespace(flags)
	if err != nil {
		return nil, nil, err
	}
	a, err := manifests.NewApplier(cfg, manifests.Options{Set: set, DefaultNamespace: ns, Out: out})
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to the cluster: %w", err)
	}
	return objects, a, nil
}

const setHelp = `The objects form an ApplySet (KEP-3659): each is labelled
applyset.kubernetes.io/part-of=<id>, and a parent Secret
applyset-cnat-<name> in --inventory-namespace (default "default", which every
cluster has and no set owns) records their kinds and namespaces. kubectl
reads it: kubectl get secrets -A -l applyset.kubernetes.io/id. Versions of an
overlay that live in different directories must share --name.`
