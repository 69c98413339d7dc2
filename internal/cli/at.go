package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

func newAtCommand(streams genericiooptions.IOStreams, flags *genericclioptions.ConfigFlags) *cobra.Command {
	var name, timeZone string
	var w when
	cmd := &cobra.Command{
		Use:   "at TIME -- COMMAND...",
		Short: "Run a command once, at a given time, in a Pod",
		Long: `Create an At (cnat.programming-kubernetes.info/v1beta1) that runs COMMAND
with /bin/sh -c at TIME, in the namespace of --namespace (or of the current
context).

TIME is one of:
  +90s, +10m, +1h30m           that long from now (written as RFC 3339 UTC)
  2026-11-22T09:00:00Z          an RFC 3339 time with an offset
  2026-11-22T09:00:00+01:00
  2026-11-22T09:00 --time-zone Europe/Berlin
                                a wall-clock time in an IANA time zone
                                (daylight saving handled by the controller)

The words after -- are joined with spaces into one shell line, as ssh does;
quote shell syntax to keep it for the Pod: cnatctl at +1m -- 'date > /tmp/x'.

The At is named --name, or at-<random> if not given. If the API server
refuses it, its message (which names the field) is printed.

` + exitCodesHelp,
		Example: `  cnatctl at +10m -- echo "Time to check the backups"
  cnatctl at 2026-11-22T09:00 --time-zone Europe/Berlin --name reminder -- echo hi`,
		// A TIME cnatctl cannot read is a mistake in the command line, as a
		// missing COMMAND is: both are answered with the usage.
		Args: cobra.MatchAll(cobra.MinimumNArgs(2), func(cmd *cobra.Command, args []string) error {
			if dash := cmd.ArgsLenAtDash(); dash > 1 {
				return fmt.Errorf("only TIME goes before --, got %q", args[:dash])
			}
			var err error
			w, err = parseWhen(args[0], timeZone, time.Now())
			return err
		}),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := atClient(flags)
			if err != nil {
				return err
			}
			at := &cnatv1beta1.At{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: cnatv1beta1.AtSpec{
					Schedule: w.Schedule,
					Command:  strings.Join(args[1:], " "),
				},
			}
			if name == "" {
				at.GenerateName = "at-"
			}
			if w.TimeZone != "" {
				at.Spec.TimeZone = &w.TimeZone
			}
			if err := c.Create(cmd.Context(), at, client.FieldOwner(cnatv1beta1.CLIFieldManager)); err != nil {
				return fmt.Errorf("creating the At in namespace %s: %w", ns, err)
			}
			runsAt := w.Instant.Format(time.RFC3339)
			if w.TimeZone != "" {
				runsAt += " (" + w.TimeZone + ")"
			}
			_, err = fmt.Fprintf(streams.Out, "at/%s created, runs at %s\n", at.Name, runsAt)
			return err
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "name of the At (default: at-<random>)")
	cmd.Flags().StringVar(&timeZone, "time-zone", "", "IANA time zone of a wall-clock TIME, such as Europe/Berlin")
	return cmd
}
