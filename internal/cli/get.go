package cli

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/rest"
	"k8s.io/kubectl/pkg/cmd/get"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// tableAccept asks for a Table (the CRD's printer columns), as kubectl get does.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

// atsResource names the v1beta1 Ats, whatever version the API server
// prefers.
var atsResource = "ats." + cnatv1beta1.GroupVersion.Version + "." + cnatv1beta1.GroupVersion.Group

func newGetCommand(streams genericiooptions.IOStreams, flags *genericclioptions.ConfigFlags) *cobra.Command {
	var allNamespaces bool
	printFlags := genericclioptions.NewPrintFlags("")
	cmd := &cobra.Command{
		Use:   "get [NAME]",
		Short: "List Ats, or show one",
		Long: `List the Ats of the namespace (all namespaces with -A), or the At NAME, as
"kubectl get ats" does: the columns are the At's printer columns, NAME
SCHEDULE TIME ZONE COMMAND PHASE AGE, and with -o wide also EXIT CODE and
POD.

-o yaml or -o json prints the objects (without managedFields unless
--show-managed-fields), -o name their names, -o jsonpath=... and
-o go-template=... what the template selects.

` + exitCodesHelp,
		Example: `  cnatctl get
  cnatctl get -A -o wide
  cnatctl get backup-reminder -o yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			output := *printFlags.OutputFormat
			table := output == "" || output == "wide"
			var printer printers.ResourcePrinter = &get.TablePrinter{Delegate: printers.NewTablePrinter(printers.PrintOptions{Wide: output == "wide", WithNamespace: allNamespaces})}
			if !table {
				var err error
				if printer, err = printFlags.ToPrinter(); err != nil {
					return err
				}
			}
			ns, err := namespace(flags)
			if err != nil {
				return err
			}
			infos, err := resource.NewBuilder(flags).Unstructured().
				NamespaceParam(ns).DefaultNamespace().AllNamespaces(allNamespaces).
				ResourceTypeOrNameArgs(true, append([]string{atsResource}, args...)...).
				TransformRequests(func(req *rest.Request) {
					if table {
						req.SetHeader("Accept", tableAccept)
					}
				}).
				Do().Infos()
			switch {
			case apierrors.IsNotFound(err) && len(args) == 1:
				return fmt.Errorf("at/%s not found in namespace %s", args[0], ns)
			case err != nil:
				return fmt.Errorf("reading Ats: %w", err)
			}
			var out bytes.Buffer
			for _, info := range infos {
				if err := printer.PrintObj(info.Object, &out); err != nil {
					return err
				}
			}
			if table && out.Len() == 0 {
				where := "in namespace " + ns
				if allNamespaces {
					where = "in any namespace"
				}
				_, err := fmt.Fprintf(streams.ErrOut, "No Ats %s.\n", where)
				return err
			}
			_, err = out.WriteTo(streams.Out)
			return err
		},
	}
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "list the Ats of all namespaces")
	printFlags.AddFlags(cmd)
	cmd.Flags().Lookup("output").Usage = "output format: wide, or one of " + strings.Join(printFlags.AllowedFormats(), ", ")
	return cmd
}
