package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/programming-kubernetes/cnat/hack/internal/launch"
)

// startController starts the controller exactly as `make run` and `make
// e2e` do, through host_controller of hack/lib/controller.sh (webhooks on
// https://localhost:9443 as the local overlay expects, probes on
// 127.0.0.1:8081), once no in-cluster controller acts beside it, with the
// administrator's kubeconfig as `make run`, its output in log, and extra
// flags, and waits until it is ready. bin is the binary, if not
// bin/cnat-controller.
func startController(ctx context.Context, root, kubeconfig, log, bin string, extra []string) (*launch.Process, error) {
	lib := filepath.Join(root, "hack", "lib", "controller.sh")
	env := []string{"KUBECONFIG=" + kubeconfig, "PATH=" + filepath.Join(root, "bin") + ":" + os.Getenv("PATH"), "CNAT_CONTROLLER=" + bin}
	waitOut := exec.CommandContext(ctx, "bash", "-c", `source "$1" && wait_no_incluster_controller`, "bench", lib)
	waitOut.Env = append(os.Environ(), env...)
	waitOut.Stdout, waitOut.Stderr = os.Stderr, os.Stderr
	if err := waitOut.Run(); err != nil {
		return nil, fmt.Errorf("starting the controller with hack/lib/controller.sh: %w", err)
	}
	return launch.Start(ctx, launch.Options{
		Command: append([]string{"bash", "-c", `source "$1" && host_controller "${@:2}"`, "bench", lib}, extra...),
		Env:     env,
		Log:     log,
		Probe:   "127.0.0.1:8081",
	})
}
