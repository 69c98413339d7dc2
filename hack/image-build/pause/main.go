// Command pause is the sandbox container of every Pod on the real node of
// the local cluster (hack/real-node-up.sh): it holds the Pod's namespaces
// while the Pod lives. It waits for SIGINT or SIGTERM, then exits 0, and
// reaps the children that end up with it as PID 1 of a Pod that shares its
// process namespace. It does what registry.k8s.io/pause does; it is built
// here (CGO_ENABLED=0) so that the node needs no registry.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println("pause (cnat hack/image-build/pause)")
		return
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "pause: warning: not PID 1, will not reap zombies")
	}
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			fmt.Fprintf(os.Stderr, "pause: shutting down, got signal %v\n", s)
			os.Exit(0)
		}
		reap()
	}
}

// reap collects every child that has exited.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
