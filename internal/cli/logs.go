package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/atpod"
)

func newLogsCommand(streams genericiooptions.IOStreams, flags *genericclioptions.ConfigFlags) *cobra.Command {
	var attempt int32
	var follow bool
	cmd := &cobra.Command{
		Use:   "logs AT [--attempt N] [-f]",
		Short: "Print the logs of an At's Pod",
		Long: `Print the logs of the Pod that ran the At: its latest attempt's Pod
(status.podName), or with --attempt N the Pod of attempt N
(<at>-<first 8 characters of the At's UID>-<N>).
-f follows the log while the Pod runs.

When there is nothing to print, it says why: the At has not started a Pod
yet, the Pod is gone (deleted, or removed with the At's TTL), or the node
cannot serve logs (on the local cluster's simulated kwok nodes no container
runs, so there are none).

` + exitCodesHelp,
		Example: `  cnatctl logs backup-reminder
  cnatctl logs backup-reminder --attempt 2 -f`,
		Args: cobra.MatchAll(cobra.ExactArgs(1), func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("attempt") && attempt < 1 {
				return fmt.Errorf("--attempt counts from 1, got %d", attempt)
			}
			return nil
		}),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, ns, err := atClient(flags)
			if err != nil {
				return err
			}
			at := &cnatv1beta1.At{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: args[0]}, at); err != nil {
				if apierrors.IsNotFound(err) {
					return fmt.Errorf("at/%s not found in namespace %s", args[0], ns)
				}
				return fmt.Errorf("reading at/%s: %w", args[0], err)
			}
			pod, err := podOf(at, attempt)
			if err != nil {
				return err
			}
			cs, err := clientset(flags)
			if err != nil {
				return err
			}
			stream, err := cs.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Follow: follow}).Stream(ctx)
			if err != nil {
				return logsError(at, pod, err)
			}
			defer func() { _ = stream.Close() }()
			n, err := io.Copy(streams.Out, stream)
			if err != nil {
				return fmt.Errorf("reading the logs of Pod %s: %w", pod, err)
			}
			if n == 0 {
				_, _ = fmt.Fprintln(streams.ErrOut, noLogsReason(cmd.Context(), cs, ns, pod, at.Name))
			}
			return nil
		},
	}
	cmd.Flags().Int32Var(&attempt, "attempt", 0, "the attempt (1, 2, ...) whose Pod to read; default: the latest")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "follow the log while the Pod runs")
	return cmd
}

// podOf is the name of the Pod of the At's attempt, or of its latest Pod for
// attempt 0.
func podOf(at *cnatv1beta1.At, attempt int32) (string, error) {
	if attempt > 0 {
		if attempt > at.Status.Attempts {
			return "", fmt.Errorf("at/%s has started %d attempt(s), not %d", at.Name, at.Status.Attempts, attempt)
		}
		return atpod.PodName(at, attempt), nil
	}
	if at.Status.PodName == "" {
		phase := "phase " + string(at.Status.Phase)
		if at.Status.Phase == "" {
			phase = "the controller has not seen it yet"
		}
		return "", fmt.Errorf("at/%s has not started a Pod yet (%s; schedule %s), so there are no logs", at.Name, phase, scheduleOf(at))
	}
	return at.Status.PodName, nil
}

// logsError explains why the logs of pod could not be read.
func logsError(at *cnatv1beta1.At, pod string, err error) error {
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("the Pod %s of at/%s is gone (deleted, or removed with the At's TTL): its logs went with it", pod, at.Name)
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return fmt.Errorf("no logs for Pod %s of at/%s: %s (on simulated nodes, such as the local cluster's kwok nodes, no container runs and there are no logs)", pod, at.Name, status.Status().Message)
	}
	return fmt.Errorf("no logs for Pod %s of at/%s: %w (on simulated nodes, such as the local cluster's kwok nodes, no container runs and there are no logs)", pod, at.Name, err)
}

// noLogsReason says why a Pod's log was empty.
func noLogsReason(ctx context.Context, cs kubernetes.Interface, ns, pod, at string) string {
	p, err := cs.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
	switch {
	case err != nil:
		return fmt.Sprintf("Pod %s of at/%s wrote no logs.", pod, at)
	case p.Spec.NodeName == "":
		return fmt.Sprintf("Pod %s of at/%s is not scheduled to a node yet (phase %s): no logs yet.", pod, at, p.Status.Phase)
	default:
		return fmt.Sprintf("Pod %s of at/%s (phase %s, node %s) wrote no logs (on simulated nodes, such as the local cluster's kwok nodes, no container runs).", pod, at, p.Status.Phase, p.Spec.NodeName)
	}
}

// scheduleOf is the At's schedule, with its time zone in brackets if it has
// one: 2026-11-22T09:00[Europe/Berlin].
func scheduleOf(at *cnatv1beta1.At) string {
	if at.Spec.TimeZone != nil && *at.Spec.TimeZone != "" {
		return at.Spec.Schedule + "[" + *at.Spec.TimeZone + "]"
	}
	return at.Spec.Schedule
}
