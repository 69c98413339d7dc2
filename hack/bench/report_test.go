package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"gonum.org/v1/plot/plotter"
	"k8s.io/utils/ptr"

	"github.com/programming-kubernetes/cnat/hack/internal/judge"
)

func fixture() *Result {
	return &Result{
		N: 1000, Concurrency: 20,
		Stages: []*Stage{
			{
				Name: "raw", Title: "raw Pod creates, unthrottled client, concurrency 20 (the limit)", N: 1000,
				FirstPod:    Distribution{Count: 1000, P50: 1.2, P90: 2.1, P99: 2.5, Max: 2.6},
				AllTerminal: true, AllTerminalSeconds: 20, WritesPerUnit: 1, WritesPerUnitAfterT: 1, APIServerCPUSeconds: 5, EventsStored: 12,
				Requests: []RequestCount{{RequestKey: RequestKey{Verb: "POST", Resource: "pods", Code: "201"}, Count: 1000}, {RequestKey: RequestKey{Verb: "GET", Resource: "secrets", Code: "200"}, Count: 2}},
				Events:   []EventCount{{Reporter: "default-scheduler", Reason: "Scheduled", Count: 1000, AfterT: 1000}},
			},
			{
				Name: "cnat", Title: "cnat", N: 1000, CreationSeconds: 6.5,
				FirstPod:    Distribution{Count: 1000, P50: 13.2, P90: 22, P99: 25.7, Max: 26.1},
				AllTerminal: true, AllTerminalSeconds: 35.9, WritesPerUnit: 4, WritesPerUnitAfterT: 3, APIServerCPUSeconds: 12, EventsStored: 14,
				Requests: []RequestCount{
					{RequestKey: RequestKey{Verb: "APPLY", Group: "cnat.programming-kubernetes.info", Resource: "ats", Subresource: "status", Code: "200"}, Count: 3000},
					{RequestKey: RequestKey{Verb: "APPLY", Group: "cnat.programming-kubernetes.info", Resource: "ats", Subresource: "status", Code: "409"}, Count: 50},
					{RequestKey: RequestKey{Verb: "APPLY", Resource: "pods", Code: "201"}, Count: 1000},
					{RequestKey: RequestKey{Verb: "PUT", Group: "coordination.k8s.io", Resource: "leases", Code: "200"}, Count: 3},
					{RequestKey: RequestKey{Verb: "GET", Resource: "secrets", Code: "200"}, Count: 20},
				},
				AfterT: &Window{CPUSeconds: 8, Requests: []RequestCount{
					{RequestKey: RequestKey{Verb: "APPLY", Group: "cnat.programming-kubernetes.info", Resource: "ats", Subresource: "status", Code: "200"}, Count: 2000},
					{RequestKey: RequestKey{Verb: "APPLY", Resource: "pods", Code: "201"}, Count: 1000},
				}},
				Events: []EventCount{
					{Reporter: "cnat-controller", Reason: "Succeeded", Count: 1000, AfterT: 1000},
					{Reporter: "default-scheduler", Reason: "Scheduled", Count: 1000, AfterT: 1000},
				},
				Controller: &ControllerUsage{CPUAdmissionSeconds: 4.2, CPUFiringSeconds: 9.8, PeakRSSBytes: 80 << 20},
			},
			{
				Name: "cronjob", Title: "CronJob controller (kube-controller-manager, 5 CronJob workers)", N: 1000,
				Job:         &Distribution{Count: 1000, P50: 58, P90: 100, P99: 117, Max: 118},
				FirstPod:    Distribution{Count: 990, P50: 108, P90: 190, P99: 214, Max: 217},
				AllTerminal: false, WritesPerUnit: 5.5,
				Verdict: judge.Verdict{Lost: 10, Findings: []string{"lost: bench-000001: not finished"}},
			},
		},
		Memory: []MemoryReading{
			{Situation: "no Ats", RSSBytes: 40 << 20, PeakRSSBytes: 45 << 20, SettleSeconds: 3.1},
			{Situation: "100000 pending Ats (this build)", PendingAts: 100000, Controller: thisBuild, RSSBytes: 120 << 20, PeakRSSBytes: 140 << 20,
				SettleSeconds: 4, ListedSeconds: 12.5, CanaryLatenessSeconds: ptr.To(0.25), CanaryDueSeconds: 10},
		},
	}
}

func TestRenderTables(t *testing.T) {
	g := NewWithT(t)
	got := renderTables(fixture())
	for _, want := range []string{
		"| raw Pod creates, unthrottled client, concurrency 20 (the limit) | 1.20 s / 2.10 s / 2.50 s / 2.60 s | 1.0× | T+20.0 s | 1.00 | 5.0 ms | 0 / 0 |",
		"| **cnat** | 13.2 s / 22.0 s / 25.7 s / 26.1 s | 10.3× | T+35.9 s (1.8×) | 4.00 (3.00) | 12.0 ms (8.0 ms) | 0 / 0 |",
		"| CronJob controller (kube-controller-manager, 5 CronJob workers): Job | 58.0 s / 100 s / 117 s / 118 s | 46.8× |  |  |  |  |",
		"| CronJob controller (kube-controller-manager, 5 CronJob workers): first Pod | 108 s / 190 s / 214 s / 217 s | 85.6× | not by the end (990 of 1000) | 5.50 | — | 0 / 10 |",
		"| 6.50 s | 4.2 s | 9.8 s | 80 MiB | 0 |",
		// By code, and after T in brackets for the stage whose Ats came first.
		"| `APPLY ats/status.cnat.programming-kubernetes.info` | 200 |  | 3.00 (2.00) |  |",
		"| `APPLY ats/status.cnat.programming-kubernetes.info` | 409 |  | 0.05 (0) |  |",
		"| `POST pods` | 201 | 1.00 |  |  |",
		"| cnat-controller | Succeeded |  | 1.00 (1.00) |  |",
		"| default-scheduler | Scheduled | 1.00 | 1.00 (1.00) |  |",
		"Events stored in the cluster as each stage began (each stage removes its own): raw 12, cnat 14, cronjob 0.",
		"| no Ats | 40 MiB | 45 MiB | — | 3.10 s | — |",
		"| 100000 pending Ats (this build) | 120 MiB | 140 MiB | 12.5 s | 4.00 s | — |",
		"An At due 10.0 s after the restart with 100000 pending Ats (this build) had its Pod 0.25 s after its time.",
		// Shown because cnat made 0.02 per unit; the raw stage's 0.002 is not 0.
		"| `GET secrets` | 200 | <0.01 | 0.02 (0) |  |",
	} {
		g.Expect(got).To(ContainSubstring(want))
	}
	// Three lease renewals over 1000 Ats are noise, below 0.01 per unit.
	g.Expect(got).NotTo(ContainSubstring("leases"), "requests below 0.01 per unit are not shown")
}

func TestRenderTablesWithoutRawAnchor(t *testing.T) {
	g := NewWithT(t)
	r := fixture()
	r.Stages = r.Stages[1:2]
	g.Expect(renderTables(r)).To(ContainSubstring("| **cnat** | 13.2 s / 22.0 s / 25.7 s / 26.1 s | — | T+35.9 s | 4.00 (3.00) | 12.0 ms (8.0 ms) | 0 / 0 |"))
}

func TestReplaceSection(t *testing.T) {
	g := NewWithT(t)
	doc := "# Benchmarks\n\nProse.\n\n" + docBegin + "\nold table\n" + docEnd + "\n\nMore prose.\n"
	want := "# Benchmarks\n\nProse.\n\n" + docBegin + "\nnew table\n" + docEnd + "\n\nMore prose.\n"
	g.Expect(replaceSection(doc, "new table\n")).To(Equal(want))
	_, err := replaceSection("# Benchmarks\n", "x")
	g.Expect(err).To(MatchError(ContainSubstring("markers")), "without markers")
}

func TestCommand(t *testing.T) {
	g := NewWithT(t)
	for args, want := range map[string]string{
		"": "make bench",
		"-kubeconfig /x/.local/kubeconfig -doc docs/benchmarks.md -plot=docs/p.svg": "make bench",
		"-kubeconfig /x/k -n 10000 -stages=raw,cnat":                                "make bench BENCH_FLAGS='-n 10000 -stages=raw,cnat'",
	} {
		g.Expect(command(strings.Fields(args))).To(Equal(want), "command(%q)", args)
	}
}

func TestParseFlagsRefusesBadInput(t *testing.T) {
	g := NewWithT(t)
	for args, want := range map[string]string{
		"-n 0":               "-n: 0 is too small",
		"-stages raw,kueue":  `-stages: unknown stage "kueue"; accepted: raw, shaped, cnat, floor, job, cronjob`,
		"-concurrency -1":    "-concurrency: -1 is too small",
		"-timeout 0s":        "-timeout",
		"-n 10 extra":        "unexpected arguments",
		"-memory-batch 0":    "-memory-batch",
		"-pods-per-node 0":   "-pods-per-node",
		"-memory-pending -5": "-memory-pending",
	} {
		_, err := parseFlags(strings.Fields(args))
		g.Expect(err).To(MatchError(ContainSubstring(want)), "parseFlags(%q)", args)
	}
	o, err := parseFlags([]string{"-n", "10000", "-stages", "cnat"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.n).To(Equal(10000))
	g.Expect(o.stages).To(Equal([]string{"cnat"}))
}

func TestCumulative(t *testing.T) {
	g := NewWithT(t)
	// Two of four units started, at 0 s (drawn at the axis floor) and 2 s;
	// the curve stops at one half: the other two are lost.
	got := cumulative([]float64{2, 0}, 4)
	want := plotter.XYs{{X: floorSeconds, Y: 0}, {X: floorSeconds, Y: 0.25}, {X: 2, Y: 0.25}, {X: 2, Y: 0.5}}
	g.Expect(got).To(BeComparableTo(want))
}

// Repeated runs: each stage is compared with the raw stage of its own run,
// and cnat with the floor and Job stages of its own run; the table gives the
// median and the spread of those ratios.
func TestPairedRatios(t *testing.T) {
	g := NewWithT(t)
	r := &Result{N: 1000, Concurrency: 20, Repeat: 3}
	for round, v := range []struct{ raw, cnat, floor, rawEnd, cnatEnd, floorEnd, writes, rawCPU, cnatCPU float64 }{
		{raw: 2, cnat: 2.4, floor: 2, rawEnd: 20, cnatEnd: 30, floorEnd: 25, writes: 4.7, rawCPU: 2, cnatCPU: 6},
		{raw: 4, cnat: 4.4, floor: 4, rawEnd: 20, cnatEnd: 24, floorEnd: 24, writes: 4.8, rawCPU: 2, cnatCPU: 5},
		{raw: 2, cnat: 3, floor: 2, rawEnd: 10, cnatEnd: 13, floorEnd: 10, writes: 4.76, rawCPU: 2, cnatCPU: 8},
	} {
		r.Stages = append(r.Stages,
			&Stage{Name: "raw", Title: "raw", N: 1000, Round: round + 1, FirstPod: Distribution{Count: 1000, P99: v.raw}, AllTerminal: true, AllTerminalSeconds: v.rawEnd, WritesPerUnit: 1, APIServerCPUSeconds: v.rawCPU},
			&Stage{Name: "cnat", Title: "cnat", N: 1000, Round: round + 1, FirstPod: Distribution{Count: 1000, P99: v.cnat}, AllTerminal: true, AllTerminalSeconds: v.cnatEnd, WritesPerUnit: v.writes, APIServerCPUSeconds: v.cnatCPU},
			&Stage{Name: "floor", Title: "floor", N: 1000, Round: round + 1, FirstPod: Distribution{Count: 1000, P99: v.floor}, AllTerminal: true, AllTerminalSeconds: v.floorEnd, WritesPerUnit: 3, APIServerCPUSeconds: 4},
		)
	}
	got := renderTables(r)
	// p99 ratios 1.2, 1.1, 1.5; terminal 1.5, 1.2, 1.3; CPU 3, 2.5, 4.
	g.Expect(got).To(ContainSubstring("| cnat ÷ raw | 1.20× [1.10× – 1.50×] | 1.30× [1.20× – 1.50×] | 3.00× [2.50× – 4.00×] | 3.00× [2.50× – 4.00×] | 4.76 [4.70 – 4.80] |"))
	// Against the floor: p99 1.2, 1.1, 1.5; terminal 1.2, 1.0, 1.3; CPU 1.5, 1.25, 2.
	g.Expect(got).To(ContainSubstring("| cnat ÷ floor | 1.20× [1.10× – 1.50×] | 1.20× [1.00× – 1.30×] | 1.50× [1.25× – 2.00×] | 1.50× [1.25× – 2.00×] |  |"))
	g.Expect(got).To(ContainSubstring("| raw (run 2) |"))
	g.Expect(got).To(ContainSubstring("| request | code | raw (run 1) | cnat (run 1) | floor (run 1) | raw (run 2) |"))
	g.Expect(got).To(ContainSubstring("| **cnat** (run 2) | 0.00 s / 0.00 s / 4.40 s / 0.00 s | 1.1× | T+24.0 s (1.2×) |"), "run 2's ratio is to run 2's raw stage")
	g.Expect(spread([]float64{3, 1}, "%.1f")).To(Equal("2.0 [1.0 – 3.0]"), "the median of two is their mean")
}

func TestAdmissionTable(t *testing.T) {
	g := NewWithT(t)
	r := &Result{N: 1000, Concurrency: 20, Repeat: 2}
	for round, secs := range [][3]float64{{2, 2.5, 8}, {2.5, 2.5, 10}} {
		r.Admission = append(r.Admission,
			Admission{Kind: admissionConfigMap, N: 1000, Seconds: secs[0], Round: round + 1},
			Admission{Kind: admissionPod, N: 1000, Seconds: secs[1], Round: round + 1},
			Admission{Kind: admissionAt, N: 1000, Seconds: secs[2], Round: round + 1},
		)
	}
	got := renderTables(r)
	g.Expect(got).NotTo(ContainSubstring("first Pod after T"), "no lateness table without a lateness stage")
	g.Expect(got).To(ContainSubstring("| 1 | 500 | 400 | 125 | 0.25 | 0.31 |"))
	g.Expect(got).To(ContainSubstring("| 2 | 400 | 400 | 100 | 0.25 | 0.25 |"))
	g.Expect(got).To(ContainSubstring("| median [range] |  |  |  | 0.25 [0.25 – 0.25] | 0.28 [0.25 – 0.31] |"))
}

func TestMemorySteps(t *testing.T) {
	g := NewWithT(t)
	g.Expect(memorySteps(100000)).To(Equal([]int{1000, 2000, 5000, 10000, 20000, 50000, 100000}))
	g.Expect(memorySteps(1000)).To(Equal([]int{1000}))
	g.Expect(memorySteps(300)).To(Equal([]int{300}))
	g.Expect(memorySteps(3000)).To(Equal([]int{1000, 2000, 3000}))
}

func TestPlotMemory(t *testing.T) {
	g := NewWithT(t)
	r := fixture()
	r.Memory = append(r.Memory, MemoryReading{PendingAts: 1000, Controller: before, RSSBytes: 60 << 20, PeakRSSBytes: 70 << 20},
		MemoryReading{PendingAts: 100000, Controller: before, RSSBytes: 900 << 20, PeakRSSBytes: 1000 << 20},
		MemoryReading{PendingAts: 1000, Controller: thisBuild, RSSBytes: 60 << 20, PeakRSSBytes: 70 << 20})
	path := filepath.Join(t.TempDir(), "memory.svg")
	g.Expect(plotMemory(r, path)).To(Succeed())
	svg, err := os.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(svg)).To(ContainSubstring("before: RSS once idle"))
}

func TestVerdictProblems(t *testing.T) {
	g := NewWithT(t)
	g.Expect(verdictProblems(fixture())).To(Equal([]string{"cronjob: 0 duplicates, 10 lost (lost: bench-000001: not finished)"}))
}
