package launch

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clockTicks is USER_HZ, the unit of the CPU times in /proc/<pid>/stat. It
// is 100 on every Linux architecture Go supports.
const clockTicks = 100

// CPUSeconds returns the user plus system CPU time the process used so far.
func (p *Process) CPUSeconds() (float64, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
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
			return 0, fmt.Errorf("field %d of /proc/%d/stat: %w", field, p.cmd.Process.Pid, err)
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

// Memory returns the resident set size and its peak since the process
// started (VmRSS, VmHWM), in bytes.
func (p *Process) Memory() (rss, hwm int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
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
			return 0, 0, fmt.Errorf("%s in /proc/%d/status: %w", key, p.cmd.Process.Pid, err)
		}
		if key == "VmRSS" {
			rss = kb * 1024
		} else {
			hwm = kb * 1024
		}
	}
	return rss, hwm, s.Err()
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
