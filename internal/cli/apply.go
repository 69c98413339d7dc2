package cli

import (
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/programming-kubernetes/cnat/internal/manifests"
)

func newApplyCommand(streams genericiooptions.IOStreams, flags *genericclioptions.ConfigFlags) *cobra.Command {
	s := &setFlags{}
	opts := manifests.ApplyOptions{}
	cmd := &cobra.Command{
		Use:   "apply -k DIR [--prune] [--wait] [--timeout 5m] [--force] [--force-conflicts] [--delete-data] [--change-source]",
		Short: "Apply a kustomize overlay by server-side apply, in stages",
		Long: `Render the overlay in DIR and apply it by server-side apply under the field
manager "cnatctl". One line per object:

  <Kind>/<namespace>/<name> created|configured|unchanged|recreated|deleted

First the whole set is dry-run on the server. If any object fails (the API
server rejects it, or it changes an immutable field and --force is not
given), every failure is listed and nothing is applied. Objects whose
CustomResourceDefinition or Namespace the overlay creates are dry-run only
after those exist (after stage 1).

Then, in stages:
  1. CustomResourceDefinitions and Namespaces, waited for until established;
  2. everything else except webhook configurations;
  3. Mutating- and ValidatingWebhookConfigurations, last, so that a webhook
     whose backend is not up yet cannot block the rest (with --wait, stage 2
     must be ready before they are applied).

Objects last applied with kubectl (client-side, or --server-side) are taken
over: the fields of kubectl's field managers go to cnatctl and the
kubectl.kubernetes.io/last-applied-configuration annotation is removed, so no
stale owner keeps a field alive that the overlay dropped. A field that any
other field manager (a GitOps controller, a person) owns with another value
is a conflict: the object, the field and the manager are named and nothing
is applied; --force-conflicts takes such fields over. The fields that decide
what cnat's admission sees (the webhooks' selectors, rules, match and
failure policies and conditions; the admission policy and its binding) are
always set back to the overlay's, whoever changed them.

--force deletes and recreates the objects whose change touches an immutable
field (such as a Deployment's selector); without it their names and fields
are reported and nothing is applied.

--prune deletes, after everything was applied, the objects that a previous
apply of this set created and the overlay no longer has: only objects
labelled as members of this very set, never those of another set or of
none. An overlay that renders no objects is refused with --prune.

Refused unless --delete-data is given, before anything is applied: deleting
a CustomResourceDefinition (and with it every custom resource of its kind:
for cnat's, every At), a Namespace (every object in it) or a
PersistentVolumeClaim (its volume), whether by --prune or by --force
recreation. The refusal says what would go, e.g. the number of Ats.

--wait waits until every applied object is ready (kstatus), printing what it
still waits for; on timeout it lists what is not ready.

Objects annotated ` + manifests.SkipAnnotation + `=` + manifests.SkipValue + `
(in the overlay or in the cluster) are left alone and reported as skipped.

` + setHelp + `

` + exitCodesHelp,
		Example: `  cnatctl apply -k kustomize/overlays/local
  cnatctl apply -k kustomize/overlays/local --prune --wait --timeout 2m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			objects, a, err := s.load(cmd.Context(), flags, streams.Out)
			if err != nil {
				return err
			}
			_, err = a.Apply(cmd.Context(), objects, opts)
			return err
		},
	}
	s.addDir(cmd)
	s.addSet(cmd)
	cmd.Flags().BoolVar(&opts.Prune, "prune", false, "delete the set's objects that the overlay no longer has")
	cmd.Flags().BoolVar(&opts.Wait, "wait", false, "wait until every applied object is ready (kstatus)")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 5*time.Minute, "how long each wait may take (CRDs and Namespaces are always waited for)")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "delete and recreate objects whose change touches an immutable field (not those that hold data: see --delete-data)")
	cmd.Flags().BoolVar(&opts.ForceConflicts, "force-conflicts", false, "take over fields that another field manager owns with another value")
	cmd.Flags().BoolVar(&opts.DeleteData, "delete-data", false, "let --prune and --force delete CustomResourceDefinitions (with every custom resource of their kinds), Namespaces and PersistentVolumeClaims")
	cmd.Flags().BoolVar(&opts.ChangeSource, "change-source", false, "apply although the set was last applied from another overlay")
	return cmd
}
