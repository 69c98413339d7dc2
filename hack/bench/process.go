package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// clockTicks is USER_HZ, the unit of the CPU times in /proc/<pid>/stat. It
// is 100 on every Linux architecture Go supports.
const clockTicks = 100

// controllerProcess is the cnat controller the bench started on the host.
type controllerProcess struct {
	pid int
	log string
}

// startController starts bin/cnat-controller exactly as `make run` and
// `make e2e` do, through start_host_controller of hack/lib/controller.sh
// (webhooks on https://localhost:9443 as the local overlay expects, probes
// on 127.0.0.1:8081), with the administrator's kubeconfig as `make run`,
// its output in log, and extra flags, and waits until it is ready. bin is
// the binary, if not bin/cnat-controller.
func startController(ctx context.Context, root, kubeconfig, log, bin string, extra []string) (*controllerProcess, error) {
	script := `source "$1/hack/lib/controller.sh" && start_host_controller "${@:3}" >"$2" 2>&1 && echo "${controller_pid}"`
	cmd := exec.CommandContext(ctx, "bash", append([]string{"-c", script, "bench", root, log}, extra...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "PATH="+filepath.Join(root, "bin")+":"+os.Getenv("PATH"), "CNAT_CONTROLLER="+bin)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("starting the controller with hack/lib/controller.sh: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		return nil, fmt.Errorf("starting the controller: no PID in %q", out)
	}
	p := &controllerProcess{pid: pid, log: log}
	if err := p.waitReady(ctx, time.Minute); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// waitLogged waits until a line of the controller's log contains every one
// of parts, at most timeout, and returns when it saw it.
func (p *controllerProcess) waitLogged(ctx context.Context, timeout time.Duration, parts ...string) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		content, err := os.ReadFile(p.log)
		if err != nil {
			return time.Time{}, err
		}
		for line := range strings.Lines(string(content)) {
			if !slices.ContainsFunc(parts, func(part string) bool { return !strings.Contains(line, part) }) {
				return time.Now(), nil
			}
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return time.Time{}, fmt.Errorf("no line with %q in the controller's log within %s (%s)", parts, timeout, p.log)
}

// waitReady polls the controller's /readyz (ready once its webhooks serve).
func (p *controllerProcess) waitReady(ctx context.Context, timeout time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if !p.alive() {
			return false, fmt.Errorf("the controller exited; its log is %s", p.log)
		}
		return readyzOK(ctx, client, "http://127.0.0.1:8081/readyz"), nil
	})
	if wait.Interrupted(err) && ctx.Err() == nil {
		return fmt.Errorf("the controller was not ready within %s; its log is %s", timeout, p.log)
	}
	return err
}

// readyzOK tells whether a GET of url answers 200.
func readyzOK(ctx context.Context, client *http.Client, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// alive tells whether the process still runs (a zombie does not).
func (p *controllerProcess) alive() bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid))
	if err != nil {
		return false
	}
	state, err := statField(stat, 3)
	return err == nil && state != "Z" && state != "X"
}

// stop ends the controller with SIGTERM (it shuts down gracefully within
// 30 s), then SIGKILL.
func (p *controllerProcess) stop() {
	_ = syscall.Kill(p.pid, syscall.SIGTERM)
	for range 400 {
		if !p.alive() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(p.pid, syscall.SIGKILL)
}

// cpuSeconds returns the user plus system CPU time the process used so far.
func (p *controllerProcess) cpuSeconds() (float64, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid))
	if err != nil {
		return 0, fmt.Errorf("reading the controller's CPU time: %w", err)
	}
	var ticks float64
	for _, field := range []int{14, 15} { // utime, stime
		s, err := statField(stat, field)
		if err != nil {
			return 0, err
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, fmt.Errorf("field %d of /proc/%d/stat: %w", field, p.pid, err)
		}
		ticks += v
	}
	return ticks / clockTicks, nil
}

// statField returns field n (1-based, as in proc(5)) of /proc/<pid>/stat.
// The command name (field 2) may hold spaces and parentheses, so fields are
// counted after its closing parenthesis.
func statField(stat []byte, n int) (string, error) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 || n < 3 {
		return "", errors.New("unexpected /proc/<pid>/stat format")
	}
	fields := strings.Fields(string(stat[end+1:]))
	if n-3 >= len(fields) {
		return "", fmt.Errorf("/proc/<pid>/stat has no field %d", n)
	}
	return fields[n-3], nil
}

// memory returns the resident set size and its peak since the process
// started (VmRSS, VmHWM), in bytes.
func (p *controllerProcess) memory() (rss, hwm int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.pid))
	if err != nil {
		return 0, 0, fmt.Errorf("reading the controller's memory: %w", err)
	}
	defer func() { _ = f.Close() }()
	s := bufio.NewScanner(f)
	for s.Scan() {
		key, value, ok := strings.Cut(s.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s in /proc/%d/status: %w", key, p.pid, err)
		}
		if key == "VmRSS" {
			rss = kb * 1024
		} else {
			hwm = kb * 1024
		}
	}
	return rss, hwm, s.Err()
}

// rssSampler records the largest resident set size of the controller while
// it runs, sampled every 100 ms.
type rssSampler struct {
	stopOnce sync.Once
	done     chan struct{}
	finished chan struct{}
	peak     int64
}

func (p *controllerProcess) sampleRSS() *rssSampler {
	s := &rssSampler{done: make(chan struct{}), finished: make(chan struct{})}
	go func() {
		defer close(s.finished)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			if rss, _, err := p.memory(); err == nil {
				s.peak = max(s.peak, rss)
			}
			select {
			case <-s.done:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// stop ends the sampling and returns the peak in bytes.
func (s *rssSampler) stop() int64 {
	s.stopOnce.Do(func() { close(s.done) })
	<-s.finished
	return s.peak
}

// waitIdle waits until the controller used less than 2 % of a core for
// three seconds in a row (it has caught up with its watches), at most
// timeout. It returns how long that took.
func (p *controllerProcess) waitIdle(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	quiet := 0
	last, err := p.cpuSeconds()
	if err != nil {
		return 0, err
	}
	for time.Since(start) < timeout {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Second):
		}
		now, err := p.cpuSeconds()
		if err != nil {
			return 0, err
		}
		if now-last < 0.02 {
			quiet++
		} else {
			quiet = 0
		}
		last = now
		if quiet >= 3 {
			return time.Since(start), nil
		}
	}
	return time.Since(start), fmt.Errorf("the controller was still busy after %s", timeout)
}
