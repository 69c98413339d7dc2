package launch

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/procfs"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/programming-kubernetes/cnat/hack/internal/poll"
)

// CPUSeconds returns the user plus system CPU time the process used so far
// (/proc/<pid>/stat).
func (p *Process) CPUSeconds() (float64, error) {
	proc, err := procfs.NewProc(p.cmd.Process.Pid)
	if err != nil {
		return 0, fmt.Errorf("reading the controller's CPU time: %w", err)
	}
	stat, err := proc.Stat()
	if err != nil {
		return 0, fmt.Errorf("reading the controller's CPU time: %w", err)
	}
	return stat.CPUTime(), nil
}

// Memory returns the resident set size and its peak since the process
// started (VmRSS, VmHWM of /proc/<pid>/status), in bytes.
func (p *Process) Memory() (rss, hwm int64, err error) {
	proc, err := procfs.NewProc(p.cmd.Process.Pid)
	if err != nil {
		return 0, 0, fmt.Errorf("reading the controller's memory: %w", err)
	}
	status, err := proc.NewStatus()
	if err != nil {
		return 0, 0, fmt.Errorf("reading the controller's memory: %w", err)
	}
	return int64(status.VmRSS), int64(status.VmHWM), nil
}

// SampleRSS samples the resident set size of the process every 100 ms
// until the returned stop, which returns its peak in bytes (again if called
// again).
func (p *Process) SampleRSS() (stop func() int64) {
	done, peak := make(chan struct{}), make(chan int64)
	go func() {
		var largest int64
		wait.Until(func() {
			if rss, _, err := p.Memory(); err == nil {
				largest = max(largest, rss)
			}
		}, 100*time.Millisecond, done)
		peak <- largest
	}()
	return sync.OnceValue(func() int64 { close(done); return <-peak })
}

// WaitIdle waits until the controller used less than 2 % of a core for
// three seconds in a row (it has caught up with its watches), at most
// timeout. It returns how long that took.
func (p *Process) WaitIdle(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	quiet, last := 0, -1.0
	err := poll.Until(ctx, time.Second, timeout, func(context.Context) (bool, error) {
		now, err := p.CPUSeconds()
		if err != nil {
			return false, err
		}
		if last >= 0 && now-last < 0.02 {
			quiet++
		} else {
			quiet = 0
		}
		last = now
		return quiet >= 3, nil
	}, func() error { return fmt.Errorf("the controller was still busy after %s", timeout) })
	return time.Since(start), err
}
