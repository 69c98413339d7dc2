package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// replica is one cnat-controller process on the host, run as the
// controller's ServiceAccount. Replicas differ in their ports and
// certificate directories; the webhook proxy (proxy.go) serves the address
// the local overlay registers, https://localhost:9443, from whichever
// replica is up.
type replica struct {
	h     *harness
	index int
	// starts counts the processes started; each writes its own log.
	starts  int
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	stopped bool // SIGSTOPped
}

func (r *replica) probeAddr() string   { return fmt.Sprintf("127.0.0.1:%d", 18081+r.index) }
func (r *replica) webhookAddr() string { return fmt.Sprintf("127.0.0.1:%d", 19443+r.index) }

// start starts the replica's process and waits until it is ready (its
// webhook server serves).
func (r *replica) start(ctx context.Context, leaderElect bool) error {
	r.starts++
	r.logPath = filepath.Join(r.h.cfg.workDir, "logs", fmt.Sprintf("%s-controller-%d.%d.log", r.h.scenario, r.index, r.starts))
	if err := os.MkdirAll(filepath.Dir(r.logPath), 0o755); err != nil {
		return err
	}
	log, err := os.Create(r.logPath)
	if err != nil {
		return err
	}
	args := []string{
		"--kubeconfig=" + r.h.cfg.controllerKubeconfig,
		"--metrics-bind-address=0",
		"--health-probe-bind-address=" + r.probeAddr(),
		fmt.Sprintf("--webhook-port=%d", 19443+r.index),
		"--webhook-dns-name=localhost",
		"--webhook-secret=cnat-webhook-localhost-cert",
		"--webhook-cert-dir=" + filepath.Join(r.h.cfg.workDir, fmt.Sprintf("webhook-certs-%d", r.index)),
		"--webhook-cert-from-secret",
	}
	if leaderElect {
		args = append(args, "--leader-elect", "--leader-election-namespace=cnat-system")
	}
	if r.h.cfg.prefetch > 0 {
		args = append(args, "--prefetch="+r.h.cfg.prefetch.String())
	}
	cmd := exec.Command(r.h.cfg.controllerBinary, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return fmt.Errorf("starting %s: %w", r.h.cfg.controllerBinary, err)
	}
	r.cmd, r.done, r.stopped = cmd, make(chan struct{}), false
	go func(done chan struct{}) {
		_ = cmd.Wait()
		_ = log.Close()
		close(done)
	}(r.done)
	return r.waitReady(ctx)
}

// waitReady polls /readyz for at most a minute.
func (r *replica) waitReady(ctx context.Context) error {
	client := &http.Client{Timeout: time.Second}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, false, func(ctx context.Context) (bool, error) {
		if !r.running() {
			return false, fmt.Errorf("controller %d exited before it was ready; log: %s", r.index, r.logPath)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.probeAddr()+"/readyz", nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if wait.Interrupted(err) && ctx.Err() == nil {
		return fmt.Errorf("controller %d was not ready within a minute; log: %s", r.index, r.logPath)
	}
	return err
}

// running is true while the process exists (even SIGSTOPped).
func (r *replica) running() bool {
	if r.cmd == nil {
		return false
	}
	select {
	case <-r.done:
		return false
	default:
		return true
	}
}

// signal sends sig to the process.
func (r *replica) signal(sig syscall.Signal) error {
	if !r.running() {
		return fmt.Errorf("controller %d is not running", r.index)
	}
	if err := r.cmd.Process.Signal(sig); err != nil {
		return err
	}
	switch sig {
	case syscall.SIGSTOP:
		r.stopped = true
	case syscall.SIGCONT:
		r.stopped = false
	}
	return nil
}

// kill SIGKILLs the process and waits until it is gone.
func (r *replica) kill() error {
	if err := r.signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-r.done
	return nil
}

// stop ends the process gracefully (SIGTERM; SIGKILL after 40s).
func (r *replica) stop() {
	if !r.running() {
		return
	}
	if r.stopped {
		_ = r.signal(syscall.SIGCONT)
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(40 * time.Second):
		_ = r.kill()
	}
}

// leads is true if this process has acquired the leader election Lease, as
// its log says.
func (r *replica) leads() bool {
	if !r.running() {
		return false
	}
	log, err := os.ReadFile(r.logPath)
	return err == nil && bytes.Contains(bytes.ToLower(log), []byte("successfully acquired lease"))
}

// leader waits until one of the replicas has acquired the Lease.
func leader(ctx context.Context, replicas []*replica, timeout time.Duration) (*replica, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, r := range replicas {
			if !r.stopped && r.leads() {
				return r, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil, errors.New("no replica acquired the leader election Lease")
}
