package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/programming-kubernetes/cnat/internal/buildinfo"
)

// version and commit are set at build time with
//
//	-ldflags "-X github.com/programming-kubernetes/cnat/internal/cli.version=v1.2.3
//	          -X github.com/programming-kubernetes/cnat/internal/cli.commit=<git commit>"
//
// as make build and make release (.goreleaser.yaml) do.
var (
	version = ""
	commit  = ""
)

// Version is cnatctl's version: the one set at build time, else the module
// version go install recorded, else v0.0.0-devel. It goes into the ApplySet
// tooling annotation (cnatctl/<version>).
func Version() string {
	return buildinfo.Version(version)
}

// versionLine is what `cnatctl version` and `cnatctl --version` print:
// version, commit (set at build time, else the one go build recorded), Go
// version and platform.
func versionLine() string {
	return buildinfo.Line("cnatctl", Version(), buildinfo.Commit(commit))
}

func newVersionCommand(streams genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print cnatctl's version and the commit it was built from",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprint(streams.Out, versionLine())
			return err
		},
	}
}
