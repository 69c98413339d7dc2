package cli

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/programming-kubernetes/cnat/internal/manifests"
)

func newDiffCommand(streams genericiooptions.IOStreams, flags *genericclioptions.ConfigFlags) *cobra.Command {
	s := &setFlags{}
	var opts manifests.DiffOptions
	cmd := &cobra.Command{
		Use:   "diff -k DIR",
		Short: "Show what apply would change, by a server-side dry-run",
		Long: `Render the overlay in DIR and compare every object with the cluster by a
server-side dry-run apply, exactly as apply would send it. One line per
object:

  <Kind>/<namespace>/<name> created|configured|unchanged|recreated

(Kind/name for cluster-scoped objects). "recreated" is a change to an
immutable field, which apply makes only with --force (and, for a
CustomResourceDefinition, Namespace or PersistentVolumeClaim, --delete-data:
the note says what recreating it deletes, e.g. the number of Ats). A field
that another field manager owns with another value is a conflict, named
with its manager in the note; apply takes it only with --force-conflicts.
Changes by anyone to the fields that decide what cnat's admission sees
(the webhooks' selectors, rules, match and failure policies and conditions;
the admission policy and its binding) are drift even where the overlay
leaves them unset: apply sets them back. Objects whose
CustomResourceDefinition or Namespace the overlay creates cannot be dry-run
before they exist: they are reported as created, with a note.

With --verbose, each change is followed by a unified diff of the object's
YAML (live against applied), with Secret data masked. With --prune, members
of the set that the overlay no longer has are reported as deleted.

Every object is compared even when some fail; all failures are listed at the
end.

` + setHelp + `

` + exitCodesHelp,
		Example: `  cnatctl diff -k kustomize/overlays/local            # in CI: 0 clean, 1 drift, 2 error
  cnatctl diff -k kustomize/overlays/local --verbose --prune`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			objects, a, err := s.load(cmd.Context(), flags, streams.Out)
			if err != nil {
				return err
			}
			res, err := a.Diff(cmd.Context(), objects, opts)
			if err != nil {
				return err
			}
			if res.Drift {
				// The lines above are the report; the exit code says the rest.
				cmd.SilenceErrors = true
				return errDrift
			}
			return nil
		},
	}
	s.addDir(cmd)
	s.addSet(cmd)
	cmd.Flags().BoolVar(&opts.Verbose, "verbose", false, "print a unified diff of every change (Secret data masked)")
	cmd.Flags().BoolVar(&opts.Prune, "prune", false, "also report the set's objects that apply --prune would delete")
	return cmd
}
