// Package launch starts the cnat controller on the host for the harness and
// watches it: bench starts it as make run does (hack/lib/controller.sh),
// chaos as replicas behind its webhook proxy; both see it ready, alive,
// signalled, stopped, what its log says and what it costs (proc.go).
package launch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/programming-kubernetes/cnat/hack/internal/poll"
)

// Options say how to start a controller process.
type Options struct {
	// Command is the program and its arguments: the controller binary with
	// its flags, or a shell that execs it (so that the process started is
	// the controller, whose /proc the harness reads).
	Command []string
	// Env is added to the harness's own environment.
	Env []string
	// Log is the file its output goes to, created or truncated.
	Log string
	// Probe is the host:port of its health probes, where /readyz says when
	// it is ready (its webhook server serves).
	Probe string
}

// Process is a controller process the harness started.
type Process struct {
	// Log is the file its output goes to.
	Log    string
	probe  string
	cmd    *exec.Cmd
	done   chan struct{}
	paused bool // SIGSTOPped
}

// Start starts a controller and waits, at most a minute, until it is ready;
// if it is not, it is stopped again.
func Start(ctx context.Context, o Options) (*Process, error) {
	if err := os.MkdirAll(filepath.Dir(o.Log), 0o755); err != nil {
		return nil, err
	}
	log, err := os.Create(o.Log)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(o.Command[0], o.Command[1:]...)
	cmd.Env = append(os.Environ(), o.Env...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("starting %s: %w", o.Command[0], err)
	}
	p := &Process{Log: o.Log, probe: o.Probe, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = log.Close()
		close(p.done)
	}()
	if err := p.waitReady(ctx, time.Minute); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// waitReady polls /readyz until it answers 200, the process exits or
// timeout passes.
func (p *Process) waitReady(ctx context.Context, timeout time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	return poll.Until(ctx, 250*time.Millisecond, timeout, func(ctx context.Context) (bool, error) {
		if !p.Running() {
			return false, fmt.Errorf("the controller exited before it was ready; its log is %s", p.Log)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.probe+"/readyz", nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}, func() error {
		return fmt.Errorf("the controller was not ready within %s; its log is %s", timeout, p.Log)
	})
}

// Running is true while the process exists (even SIGSTOPped).
func (p *Process) Running() bool {
	if p == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Paused is true while the process is SIGSTOPped.
func (p *Process) Paused() bool { return p.Running() && p.paused }

// Signal sends sig to the process.
func (p *Process) Signal(sig syscall.Signal) error {
	if !p.Running() {
		return errors.New("the controller is not running")
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return err
	}
	switch sig {
	case syscall.SIGSTOP:
		p.paused = true
	case syscall.SIGCONT:
		p.paused = false
	}
	return nil
}

// Kill SIGKILLs the process and waits until it is gone.
func (p *Process) Kill() error {
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-p.done
	return nil
}

// Stop ends the process gracefully: SIGTERM (it shuts down within 30 s),
// SIGKILL after 40 s.
func (p *Process) Stop() {
	if !p.Running() {
		return
	}
	if p.paused {
		_ = p.Signal(syscall.SIGCONT)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(40 * time.Second):
		_ = p.Kill()
	}
}

// Logged tells whether a line of the log contains every one of parts,
// letter case aside.
func (p *Process) Logged(parts ...string) bool {
	content, err := os.ReadFile(p.Log)
	if err != nil {
		return false
	}
	for line := range strings.Lines(strings.ToLower(string(content))) {
		if !slices.ContainsFunc(parts, func(part string) bool { return !strings.Contains(line, strings.ToLower(part)) }) {
			return true
		}
	}
	return false
}

// WaitLogged waits until Logged(parts...), at most timeout, and returns
// when it saw the line.
func (p *Process) WaitLogged(ctx context.Context, timeout time.Duration, parts ...string) (time.Time, error) {
	err := poll.Until(ctx, 50*time.Millisecond, timeout, func(context.Context) (bool, error) { return p.Logged(parts...), nil },
		func() error {
			return fmt.Errorf("no line with %q in the controller's log within %s (%s)", parts, timeout, p.Log)
		})
	if err != nil {
		return time.Time{}, err
	}
	return time.Now(), nil
}
