package launch

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/procfs"
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

// RSSSampler records the largest resident set size of the controller while
// it runs, sampled every 100 ms.
type RSSSampler struct {
	stopOnce sync.Once
	done     chan struct{}
	finished chan struct{}
	peak     int64
}

// SampleRSS starts sampling the resident set size.
func (p *Process) SampleRSS() *RSSSampler {
	s := &RSSSampler{done: make(chan struct{}), finished: make(chan struct{})}
	go func() {
		defer close(s.finished)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			if rss, _, err := p.Memory(); err == nil {
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

// Stop ends the sampling and returns the peak in bytes.
func (s *RSSSampler) Stop() int64 {
	s.stopOnce.Do(func() { close(s.done) })
	<-s.finished
	return s.peak
}

// WaitIdle waits until the controller used less than 2 % of a core for
// three seconds in a row (it has caught up with its watches), at most
// timeout. It returns how long that took.
func (p *Process) WaitIdle(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	quiet := 0
	last, err := p.CPUSeconds()
	if err != nil {
		return 0, err
	}
	for time.Since(start) < timeout {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Second):
		}
		now, err := p.CPUSeconds()
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
