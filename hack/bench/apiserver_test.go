package main

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestParseCPU(t *testing.T) {
	g := NewWithT(t)
	cpu, err := parseCPU([]byte("# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 1.2345e+02\nprocess_cpu_seconds_total_other 1\n"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cpu).To(BeNumerically("~", 123.45, 1e-9))
	_, err = parseCPU([]byte("go_goroutines 12\n"))
	g.Expect(err).To(MatchError(ContainSubstring("no process_cpu_seconds_total")))
	_, err = parseCPU([]byte("process_cpu_seconds_total NaNx\n"))
	g.Expect(err).To(HaveOccurred())
}

func TestRenderCostRatiosAreToTheSameRunsAtCreate(t *testing.T) {
	g := NewWithT(t)
	got := renderCost([]CostStep{
		{Round: 1, Step: "plain Pod create", N: 100, Seconds: 0.5, CPUSeconds: 0.2},
		{Round: 1, Step: "At create", N: 200, Seconds: 2, CPUSeconds: 0.8},
		{Round: 1, Step: "first status, server-side apply (atstatus.Status)", N: 100, Seconds: 1, CPUSeconds: 0.6},
		{Round: 2, Step: "At create", N: 200, Seconds: 1, CPUSeconds: 0.4},
		{Round: 2, Step: "first status, server-side apply (atstatus.Status)", N: 100, Seconds: 1, CPUSeconds: 0.6},
	})
	g.Expect(got).To(ContainSubstring("| 1 | plain Pod create | 100 | 2.00 ms | 0.50× | 200 |\n"))
	g.Expect(got).To(ContainSubstring("| 1 | At create | 200 | 4.00 ms | 1.00× | 100 |\n"))
	g.Expect(got).To(ContainSubstring("| 1 | first status, server-side apply (atstatus.Status) | 100 | 6.00 ms | 1.50× | 100 |\n"))
	g.Expect(got).To(ContainSubstring("| 2 | first status, server-side apply (atstatus.Status) | 100 | 6.00 ms | 3.00× | 100 |\n"))
}

// A life's CPU is the sum of its steps' CPU per object, each run apart.
func TestRenderCostSumsEachLife(t *testing.T) {
	g := NewWithT(t)
	got := renderCost([]CostStep{
		{Round: 1, Step: "At create", N: 200, Seconds: 1, CPUSeconds: 0.8},
		{Round: 1, Step: "At life: create", Life: lifeAt, N: 100, Seconds: 1, CPUSeconds: 0.4},
		{Round: 1, Step: "At life: Pending status", Life: lifeAt, N: 100, Seconds: 1, CPUSeconds: 0.5},
		{Round: 1, Step: "Job life: create, suspended", Life: lifeJob, N: 100, Seconds: 1, CPUSeconds: 0.3},
		{Round: 1, Step: "Job life: status: suspended", Life: lifeJob, N: 100, Seconds: 1, CPUSeconds: 0.3},
		{Round: 2, Step: "At life: create", Life: lifeAt, N: 100, Seconds: 1, CPUSeconds: 0.8},
		{Round: 2, Step: "Job life: create, suspended", Life: lifeJob, N: 100, Seconds: 1, CPUSeconds: 0.4},
	})
	g.Expect(got).To(ContainSubstring("| 1 | 9.00 ms | 6.00 ms | 1.50× |\n"))
	g.Expect(got).To(ContainSubstring("| 2 | 8.00 ms | 4.00 ms | 2.00× |\n"))
	g.Expect(got).To(ContainSubstring("| median [range] |  |  | 1.75× [1.50× – 2.00×] |\n"))
	g.Expect(renderCost([]CostStep{{Round: 1, Step: "At create", N: 1, Seconds: 1, CPUSeconds: 1}})).NotTo(ContainSubstring("whole life"), "no lives, no sums")
}
