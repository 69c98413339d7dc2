package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"github.com/programming-kubernetes/cnat/hack/internal/cluster"
)

// describeMachine says where the run happened; what it cannot find out it
// leaves empty.
func describeMachine(_ context.Context, c *cluster.Clients, root string) Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version()}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		s := bufio.NewScanner(f)
		for s.Scan() {
			if k, v, ok := strings.Cut(s.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
		_ = f.Close()
	}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		s := bufio.NewScanner(f)
		for s.Scan() {
			if fields := strings.Fields(s.Text()); len(fields) >= 2 && fields[0] == "MemTotal:" {
				kb, _ := strconv.Atoi(fields[1])
				m.MemoryGiB = (kb + (1 << 19)) >> 20
			}
		}
		_ = f.Close()
	}
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		if fields := strings.Fields(string(load)); len(fields) > 0 {
			m.LoadAverage = fields[0]
		}
	}
	if release, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(release))
	}
	if v, err := c.Kube.Discovery().ServerVersion(); err == nil {
		m.Kubernetes = v.GitVersion
	}
	if out, err := exec.Command("git", "-C", root, "describe", "--always", "--dirty").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
	}
	return m
}
