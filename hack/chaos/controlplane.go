package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/programming-kubernetes/cnat/hack/internal/poll"
)

// component is a control plane process of the local cluster as kwokctl
// (runtime binary) records it in the cluster's kwok.yaml: kwokctl starts it
// in workDir, with its output in workDir/logs/<binary>.log and its PID in
// workDir/pids/<binary>.pid.
type component struct {
	Name    string   `json:"name"`
	Binary  string   `json:"binary"`
	Args    []string `json:"args"`
	WorkDir string   `json:"workDir"`
	Envs    []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"envs"`
}

// components reads the components of the cluster in dir.
func components(dir string) (map[string]component, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "kwok.yaml"))
	if err != nil {
		return nil, fmt.Errorf("reading the cluster's components: %w", err)
	}
	found := map[string]component{}
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var cfg struct {
			Kind       string      `json:"kind"`
			Components []component `json:"components"`
		}
		if err := yaml.Unmarshal([]byte(doc), &cfg); err != nil || cfg.Kind != "KwokctlConfiguration" {
			continue
		}
		for _, c := range cfg.Components {
			found[c.Name] = c
		}
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("%s/kwok.yaml lists no components", dir)
	}
	return found, nil
}

func (c component) pidFile() string {
	return filepath.Join(c.WorkDir, "pids", filepath.Base(c.Binary)+".pid")
}

// pid is the process ID in the component's PID file.
func (c component) pid() (int, error) {
	raw, err := os.ReadFile(c.pidFile())
	if err != nil {
		return 0, fmt.Errorf("%s: %w", c.Name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return 0, fmt.Errorf("%s: pid file: %w", c.Name, err)
	}
	return pid, nil
}

// running is true if the process of the component's PID file exists.
func (c component) running() bool {
	pid, err := c.pid()
	return err == nil && syscall.Kill(pid, 0) == nil
}

// stop sends sig to the component and waits until it has exited (SIGKILL
// after timeout).
func (c component) stop(sig syscall.Signal, timeout time.Duration) error {
	pid, err := c.pid()
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("%s (pid %d): %w", c.Name, pid, err)
	}
	exited := func(context.Context) (bool, error) { return syscall.Kill(pid, 0) != nil, nil }
	return poll.Until(context.Background(), 50*time.Millisecond, timeout, exited, func() error {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		time.Sleep(time.Second)
		return nil
	})
}

// start starts the component the way kwokctl does, in a session of its own
// so that it outlives the harness, and records its PID where kwokctl looks.
func (c component) start() error {
	log, err := os.OpenFile(filepath.Join(c.WorkDir, "logs", filepath.Base(c.Binary)+".log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer func() { _ = log.Close() }()
	cmd := exec.Command(c.Binary, c.Args...)
	cmd.Dir = c.WorkDir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = os.Environ()
	for _, e := range c.Envs {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", c.Name, err)
	}
	// Reaped when it exits, so that its PID no longer answers; it outlives
	// the harness.
	go func() { _ = cmd.Wait() }()
	return os.WriteFile(c.pidFile(), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
}

// restartStorageAndAPI restarts etcd and kube-apiserver: the API server is
// sent SIGTERM (it stops taking requests and finishes those in flight,
// writing their audit events) and killed 5s later if it has not exited (it
// may wait a minute for its watches), etcd is killed (SIGKILL), both are
// started again, and it returns once the API server answers /readyz, having
// started again, as a kubelet would, the components that exited meanwhile
// (the scheduler and controller manager exit when they lose their lease).
func (h *harness) restartStorageAndAPI(ctx context.Context) error {
	comps, err := components(h.cfg.clusterDir)
	if err != nil {
		return err
	}
	apiserver, ok1 := comps["kube-apiserver"]
	etcd, ok2 := comps["etcd"]
	if !ok1 || !ok2 {
		return errors.New("the cluster has no etcd or kube-apiserver component")
	}
	if err := apiserver.stop(syscall.SIGTERM, 5*time.Second); err != nil {
		return err
	}
	if err := etcd.stop(syscall.SIGKILL, 30*time.Second); err != nil {
		return err
	}
	if err := etcd.start(); err != nil {
		return err
	}
	if err := apiserver.start(); err != nil {
		return err
	}
	ready := func(ctx context.Context) (bool, error) {
		body, err := h.cl.Kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", nil
	}
	if err := poll.Until(ctx, 250*time.Millisecond, 2*time.Minute, ready, func() error {
		return errors.New("kube-apiserver was not ready within 2 minutes of its restart")
	}); err != nil {
		return err
	}
	// Give the others the time to notice, then restart those that gave up.
	if err := poll.Sleep(ctx, 12*time.Second); err != nil {
		return err
	}
	for _, c := range comps {
		if c.running() {
			continue
		}
		fmt.Printf("chaos: %s had exited: starting it again\n", c.Name)
		if err := c.start(); err != nil {
			return err
		}
	}
	return nil
}
