package controller

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestRunsExportedFromZero: every outcome of cnat_runs_total is a series
// from the start, so the alerts on Failed and Missed Ats (an increase of the
// counter) see the first one.
func TestRunsExportedFromZero(t *testing.T) {
	g := NewWithT(t)
	registry := prometheus.NewRegistry()
	NewMetrics(registry)
	g.Expect(testutil.GatherAndCompare(registry, strings.NewReader(`
# HELP cnat_runs_total Ats that finished, by outcome: Succeeded, Failed or Missed.
# TYPE cnat_runs_total counter
cnat_runs_total{outcome="Failed"} 0
cnat_runs_total{outcome="Missed"} 0
cnat_runs_total{outcome="Succeeded"} 0
`), "cnat_runs_total")).To(Succeed())
}
