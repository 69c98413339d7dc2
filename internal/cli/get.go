package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

func newGetCommand(streams genericiooptions.IOStreams, flags *genericclioptions.ConfigFlags) *cobra.Command {
	var allNamespaces bool
	var output string
	cmd := &cobra.Command{
		Use:   "get [NAME]",
		Short: "List Ats, or show one in detail",
		Long: `Without NAME, list the Ats of the namespace (all namespaces with -A) like
"kubectl get ats -o wide": NAME SCHEDULE PHASE EXIT-CODE POD AGE. A schedule
with a time zone is shown as 2026-11-22T09:00:00[Europe/Berlin].

With NAME, show that At in detail: schedule, scheduled time, command, phase,
reason, message, attempts, exit code, Pod, times and conditions.

-o yaml or -o json prints the objects instead.

` + exitCodesHelp,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError{errorf("get takes at most one NAME, got %q", args)}
			}
			if output != "" && output != "yaml" && output != "json" {
				return usageError{errorf("-o must be yaml or json, not %q", output)}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := atClient(flags)
			if err != nil {
				return err
			}
			now := time.Now()
			if len(args) == 1 {
				at := &cnatv1beta1.At{}
				if err := c.Get(cmd.Context(), client.ObjectKey{Namespace: ns, Name: args[0]}, at); err != nil {
					if apierrors.IsNotFound(err) {
						return fmt.Errorf("at/%s not found in namespace %s", args[0], ns)
					}
					return fmt.Errorf("reading at/%s: %w", args[0], err)
				}
				if output != "" {
					return printObject(streams.Out, at, output)
				}
				return describeAt(streams.Out, at, now)
			}
			list := &cnatv1beta1.AtList{}
			opts := []client.ListOption{}
			if !allNamespaces {
				opts = append(opts, client.InNamespace(ns))
			}
			if err := c.List(cmd.Context(), list, opts...); err != nil {
				return fmt.Errorf("listing Ats: %w", err)
			}
			if output != "" {
				return printObject(streams.Out, list, output)
			}
			if len(list.Items) == 0 {
				where := "in namespace " + ns
				if allNamespaces {
					where = "in any namespace"
				}
				_, err := fmt.Fprintf(streams.ErrOut, "No Ats %s.\n", where)
				return err
			}
			return listAts(streams.Out, list.Items, allNamespaces, now)
		},
	}
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "list the Ats of all namespaces")
	cmd.Flags().StringVarP(&output, "output", "o", "", "print the objects as yaml or json")
	return cmd
}

const none = "<none>"

// listAts prints the table of `kubectl get ats -o wide`, with the columns
// NAME SCHEDULE PHASE EXIT-CODE POD AGE (and NAMESPACE first with -A).
func listAts(out io.Writer, ats []cnatv1beta1.At, withNamespace bool, now time.Time) error {
	w := tabwriter.NewWriter(out, 0, 4, 3, ' ', 0)
	if withNamespace {
		_, _ = fmt.Fprint(w, "NAMESPACE\t")
	}
	_, _ = fmt.Fprintln(w, "NAME\tSCHEDULE\tPHASE\tEXIT-CODE\tPOD\tAGE")
	for i := range ats {
		at := &ats[i]
		if withNamespace {
			_, _ = fmt.Fprint(w, at.Namespace+"\t")
		}
		_, _ = fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", at.Name, scheduleOf(at), orNone(string(at.Status.Phase)),
			exitCodeOf(at), orNone(at.Status.PodName), age(at.CreationTimestamp, now))
	}
	return w.Flush()
}

// describeAt prints one At in detail.
func describeAt(out io.Writer, at *cnatv1beta1.At, now time.Time) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	row := func(k, v string) { _, _ = fmt.Fprintf(w, "%s:\t%s\n", k, v) }
	row("Name", at.Name)
	row("Namespace", at.Namespace)
	row("Schedule", scheduleOf(at))
	row("Scheduled time", timeOf(at.Status.ScheduledTime))
	if at.Spec.Command != "" {
		row("Command", at.Spec.Command)
	}
	if at.Spec.Template != nil && len(at.Spec.Template.Spec.Containers) > 0 {
		row("Image", at.Spec.Template.Spec.Containers[0].Image)
	}
	if at.Spec.Suspend != nil && *at.Spec.Suspend {
		row("Suspended", "true")
	}
	row("Phase", orNone(string(at.Status.Phase)))
	row("Reason", orNone(at.Status.Reason))
	row("Message", orNone(at.Status.Message))
	row("Attempts", strconv.Itoa(int(at.Status.Attempts)))
	row("Exit code", exitCodeOf(at))
	row("Pod", orNone(at.Status.PodName))
	row("Started", timeOf(at.Status.StartTime))
	row("Completed", timeOf(at.Status.CompletionTime))
	row("Age", age(at.CreationTimestamp, now))
	if err := w.Flush(); err != nil {
		return err
	}
	if len(at.Status.Conditions) == 0 {
		_, err := fmt.Fprintln(out, "Conditions:\t"+none)
		return err
	}
	_, _ = fmt.Fprintln(out, "Conditions:")
	w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(w, "  TYPE\tSTATUS\tREASON\tAGE\tMESSAGE")
	for _, c := range at.Status.Conditions {
		_, _ = fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, age(c.LastTransitionTime, now), c.Message)
	}
	return w.Flush()
}

func scheduleOf(at *cnatv1beta1.At) string {
	if at.Spec.TimeZone != nil && *at.Spec.TimeZone != "" {
		return at.Spec.Schedule + "[" + *at.Spec.TimeZone + "]"
	}
	return at.Spec.Schedule
}

func exitCodeOf(at *cnatv1beta1.At) string {
	if at.Status.ExitCode == nil {
		return none
	}
	return strconv.Itoa(int(*at.Status.ExitCode))
}

func timeOf(t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return none
	}
	return t.UTC().Format(time.RFC3339)
}

func age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return none
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

func orNone(s string) string {
	if s == "" {
		return none
	}
	return s
}

// printObject prints an At or an AtList as yaml or json, with apiVersion
// and kind and without managedFields.
func printObject(out io.Writer, obj any, format string) error {
	gv := cnatv1beta1.GroupVersion.String()
	switch o := obj.(type) {
	case *cnatv1beta1.AtList:
		o.APIVersion, o.Kind = gv, "AtList"
		for i := range o.Items {
			o.Items[i].APIVersion, o.Items[i].Kind = gv, "At"
			o.Items[i].ManagedFields = nil
		}
	case *cnatv1beta1.At:
		o.APIVersion, o.Kind = gv, "At"
		o.ManagedFields = nil
	}
	var data []byte
	var err error
	if format == "json" {
		data, err = json.MarshalIndent(obj, "", "  ")
		data = append(data, '\n')
	} else {
		data, err = yaml.Marshal(obj)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", format, err)
	}
	_, err = out.Write(data)
	return err
}
