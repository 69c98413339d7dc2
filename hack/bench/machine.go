package main

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"

	"github.com/programming-kubernetes/cnat/hack/internal/cluster"
)

// describeMachine says where the run happened; what it cannot find out it
// leaves empty.
func describeMachine(_ context.Context, c *cluster.Clients, root string) Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version()}
	if fs, err := procfs.NewDefaultFS(); err == nil {
		if cpus, err := fs.CPUInfo(); err == nil && len(cpus) > 0 {
			m.CPU = cpus[0].ModelName
		}
		if mem, err := fs.Meminfo(); err == nil && mem.MemTotal != nil {
			m.MemoryGiB = int((*mem.MemTotal + 1<<19) >> 20) // kB
		}
		if load, err := fs.LoadAvg(); err == nil {
			m.LoadAverage = strconv.FormatFloat(load.Load1, 'f', 2, 64)
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
