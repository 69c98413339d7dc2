// Command cnatctl installs cnat from its kustomize overlays and schedules,
// lists and follows Ats; named kubectl-cnat on the PATH, it is the kubectl
// plugin `kubectl cnat`.
package main

import (
	"os"
	_ "time/tzdata" // --time-zone works on machines without a tz database

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/programming-kubernetes/cnat/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args, genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}))
}
