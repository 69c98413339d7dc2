package cli

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/programming-kubernetes/cnat/internal/manifests"
)

func newBuildCommand(streams genericiooptions.IOStreams) *cobra.Command {
	s := &setFlags{}
	cmd := &cobra.Command{
		Use:   "build -k DIR",
		Short: "Render a kustomize overlay to YAML, as kustomize build does",
		Long: `Render the kustomization in DIR with kustomize's default options and print
the YAML, byte for byte what "kustomize build DIR" prints. No cluster is
needed.

` + exitCodesHelp,
		Example: `  cnatctl build -k kustomize/overlays/local`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			y, err := manifests.BuildYAML(cmd.Context(), s.dir)
			if err != nil {
				return err
			}
			_, err = streams.Out.Write(y)
			return err
		},
	}
	s.addDir(cmd)
	return cmd
}
