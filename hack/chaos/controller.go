package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/programming-kubernetes/cnat/hack/internal/launch"
	"github.com/programming-kubernetes/cnat/hack/internal/poll"
)

// replica is one cnat-controller process on the host, run as the
// controller's ServiceAccount: the process it runs now (nil before its first
// start), whose Signal, Kill and Stop refuse or do nothing when it is not
// running. Replicas differ in their ports and certificate directories; the
// webhook proxy (proxy.go) serves the address the local overlay registers,
// https://localhost:9443, from whichever replica is up.
type replica struct {
	*launch.Process
	h     *harness
	index int
	// starts counts the processes started; each writes its own log.
	starts int
}

func (r *replica) webhookAddr() string { return fmt.Sprintf("127.0.0.1:%d", 19443+r.index) }

// start starts the replica's process and waits until it is ready (its
// webhook server serves).
func (r *replica) start(ctx context.Context, leaderElect bool) error {
	r.starts++
	probe := fmt.Sprintf("127.0.0.1:%d", 18081+r.index)
	cmd := []string{
		r.h.cfg.controllerBinary,
		"--kubeconfig=" + r.h.cfg.controllerKubeconfig,
		"--metrics-bind-address=0",
		"--health-probe-bind-address=" + probe,
		fmt.Sprintf("--webhook-port=%d", 19443+r.index),
		"--webhook-dns-name=localhost",
		"--webhook-secret=cnat-webhook-localhost-cert",
		"--webhook-cert-dir=" + filepath.Join(r.h.cfg.workDir, fmt.Sprintf("webhook-certs-%d", r.index)),
		"--webhook-cert-from-secret",
	}
	if leaderElect {
		cmd = append(cmd, "--leader-elect", "--leader-election-namespace=cnat-system")
	}
	if r.h.cfg.prefetch > 0 {
		cmd = append(cmd, "--prefetch="+r.h.cfg.prefetch.String())
	}
	log := filepath.Join(r.h.cfg.workDir, "logs", fmt.Sprintf("%s-controller-%d.%d.log", r.h.scenario, r.index, r.starts))
	p, err := launch.Start(ctx, launch.Options{Command: cmd, Log: log, Probe: probe})
	if err != nil {
		return fmt.Errorf("controller %d: %w", r.index, err)
	}
	r.Process = p
	return nil
}

// serving is true while the process runs and is not SIGSTOPped.
func (r *replica) serving() bool { return r.Running() && !r.Paused() }

// leads is true if this process has acquired the leader election Lease, as
// its log says.
func (r *replica) leads() bool {
	return r.Running() && r.Logged("successfully acquired lease")
}

// leader waits until one of the replicas has acquired the Lease.
func leader(ctx context.Context, replicas []*replica, timeout time.Duration) (lead *replica, err error) {
	err = poll.Until(ctx, 100*time.Millisecond, timeout, func(context.Context) (bool, error) {
		i := slices.IndexFunc(replicas, func(r *replica) bool { return r.serving() && r.leads() })
		if i >= 0 {
			lead = replicas[i]
		}
		return i >= 0, nil
	}, func() error { return errors.New("no replica acquired the leader election Lease") })
	return lead, err
}
