package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/programming-kubernetes/cnat/internal/buildinfo"
)

func newVersionCommand(streams genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print cnatctl's version and the commit it was built from",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprint(streams.Out, buildinfo.Line("cnatctl"))
			return err
		},
	}
}
