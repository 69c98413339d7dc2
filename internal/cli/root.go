package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/programming-kubernetes/cnat/internal/buildinfo"
)

// Exit codes of every cnatctl command.
const (
	// ExitOK: the command did what it was asked; for diff, no drift.
	ExitOK = 0
	// ExitDrift: diff found objects that apply would change.
	ExitDrift = 1
	// ExitError: anything went wrong (usage, input, a refusal, a timeout).
	ExitError = 2
)

const exitCodesHelp = `Exit codes:
  0  success (diff: no drift)
  1  diff only: applying would change something (drift)
  2  error: bad usage or input, objects the API server rejects, a failed
     wait; every problem is listed before cnatctl exits`

// errDrift is returned by diff when it found drift: exit code 1, no message.
var errDrift = errors.New("drift")

// stopGrace is how long a command told to stop may take to end by itself
// (an apply releases its lock): nothing deaf to cancellation keeps CI alive.
const stopGrace = 3 * time.Second

// Main runs cnatctl with args (args[0] decides whether it is "cnatctl" or
// "kubectl cnat") and returns the exit code; SIGTERM or SIGINT cancels the
// command's context, and Main returns within stopGrace.
func Main(args []string, streams genericiooptions.IOStreams) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	name := "cnatctl"
	if len(args) > 0 {
		name = displayName(args[0])
		args = args[1:]
	}
	cmd := NewRootCommand(streams, name)
	cmd.SetArgs(args)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		select {
		case err = <-done:
		case <-time.After(stopGrace):
			err = errors.New("stopped by a signal")
			_, _ = fmt.Fprintf(streams.ErrOut, "Error: %s: stopped by a signal\n", name)
		}
	}
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, errDrift):
		return ExitDrift
	default:
		return ExitError
	}
}

// displayName is "kubectl cnat" when run as kubectl-cnat, "cnatctl" otherwise.
func displayName(argv0 string) string {
	base := strings.TrimSuffix(filepath.Base(argv0), ".exe")
	if plugin, ok := strings.CutPrefix(base, "kubectl-"); ok && plugin != "" {
		return "kubectl " + strings.ReplaceAll(plugin, "_", "-")
	}
	return "cnatctl"
}

// NewRootCommand returns cnatctl's command tree. name is how it presents
// itself in help ("cnatctl" or "kubectl cnat").
func NewRootCommand(streams genericiooptions.IOStreams, name string) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{
		Use:   "cnatctl",
		Short: "Install cnat and run commands at a given time on Kubernetes",
		Long: `cnatctl installs cnat (at(1) for Kubernetes) from its kustomize overlays and
schedules, lists and follows Ats.

Install, check and update cnat:
  ` + name + ` build -k kustomize/overlays/local      # render the overlay, no cluster needed
  ` + name + ` diff  -k kustomize/overlays/local      # what apply would change (exit 1 if anything)
  ` + name + ` apply -k kustomize/overlays/local --prune --wait

Run something later:
  ` + name + ` at +10m -- echo hello
  ` + name + ` get
  ` + name + ` logs <at>

The same binary is the kubectl plugin "kubectl cnat" when installed as
kubectl-cnat on the PATH (go build -o kubectl-cnat ./cmd/cnatctl, or a
symlink named kubectl-cnat to cnatctl).

` + exitCodesHelp,
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: name},
		// Cobra checks required flags only after this, so it is done here;
		// an error from now on is the command's own, shown without the usage.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := cmd.ValidateRequiredFlags(); err != nil {
				return err
			}
			cmd.SilenceUsage = true
			return nil
		},
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	flags.AddFlags(root.PersistentFlags())
	root.CompletionOptions.HiddenDefaultCmd = true
	// --version prints what the version command prints.
	root.Version = buildinfo.Version()
	root.SetVersionTemplate(buildinfo.Line("cnatctl"))

	root.AddCommand(
		newBuildCommand(streams),
		newDiffCommand(streams, flags),
		newApplyCommand(streams, flags),
		newAtCommand(streams, flags),
		newGetCommand(streams, flags),
		newLogsCommand(streams, flags),
		newVersionCommand(streams),
	)
	if name != "cnatctl" {
		for _, c := range root.Commands() {
			c.Example = strings.ReplaceAll(c.Example, "cnatctl ", name+" ")
		}
	}
	return root
}
