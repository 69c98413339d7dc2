package cli

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// version is set at build time with
// -ldflags "-X github.com/programming-kubernetes/cnat/internal/cli.version=v1.2.3".
var version = ""

// Version is cnatctl's version: the one set at build time, else the module
// version go install recorded, else v0.0.0-devel. It goes into the ApplySet
// tooling annotation (cnatctl/<version>).
func Version() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok && strings.HasPrefix(info.Main.Version, "v") {
		return info.Main.Version
	}
	return "v0.0.0-devel"
}

func newVersionCommand(streams genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print cnatctl's version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(streams.Out, "cnatctl %s\n", Version())
			return err
		},
	}
}
