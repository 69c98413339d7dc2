package controller

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// Metrics are cnat's own Prometheus metrics, beside controller-runtime's.
type Metrics struct {
	// FiringLateness is how late first attempts start: Pod created minus
	// scheduled time.
	FiringLateness prometheus.Histogram
	// Runs counts Ats that finished, by outcome (Succeeded, Failed, Missed).
	Runs *prometheus.CounterVec
}

// NewMetrics creates cnat's metrics and registers them, with a collector of
// Ats by phase read from the cache at scrape time.
func NewMetrics(registry prometheus.Registerer, cache client.Reader) *Metrics {
	m := &Metrics{
		FiringLateness: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "cnat_firing_lateness_seconds",
			Help:    "How long after its scheduled time an At's first Pod was created.",
			Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300},
		}),
		Runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cnat_runs_total",
			Help: "Ats that finished, by outcome: Succeeded, Failed or Missed.",
		}, []string{"outcome"}),
	}
	registry.MustRegister(m.FiringLateness, m.Runs)
	if cache != nil {
		registry.MustRegister(&phaseCollector{cache: cache})
	}
	return m
}

func (m *Metrics) recordLateness(d time.Duration) {
	if m != nil {
		m.FiringLateness.Observe(d.Seconds())
	}
}

func (m *Metrics) recordOutcome(phase cnatv1beta1.Phase) {
	if m != nil {
		m.Runs.WithLabelValues(string(phase)).Inc()
	}
}

// phaseCollector reports the number of Ats in each phase. It counts from
// the informer cache when scraped, so it is never out of step with it and
// costs the API server nothing.
type phaseCollector struct {
	cache client.Reader
}

var atsDesc = prometheus.NewDesc("cnat_ats", "Ats by phase.", []string{"phase"}, nil)

func (c *phaseCollector) Describe(ch chan<- *prometheus.Desc) { ch <- atsDesc }

func (c *phaseCollector) Collect(ch chan<- prometheus.Metric) {
	var list cnatv1beta1.AtList
	// Read only: the cache's objects as they are, not a deep copy of every
	// At on every scrape.
	if err := c.cache.List(context.Background(), &list, client.UnsafeDisableDeepCopy); err != nil {
		ch <- prometheus.NewInvalidMetric(atsDesc, err)
		return
	}
	counts := map[cnatv1beta1.Phase]int{
		cnatv1beta1.PhasePending: 0, cnatv1beta1.PhaseRunning: 0, cnatv1beta1.PhaseSucceeded: 0,
		cnatv1beta1.PhaseFailed: 0, cnatv1beta1.PhaseMissed: 0,
	}
	for i := range list.Items {
		phase := list.Items[i].Status.Phase
		if phase == "" {
			phase = cnatv1beta1.PhasePending
		}
		counts[phase]++
	}
	for phase, n := range counts {
		ch <- prometheus.MustNewConstMetric(atsDesc, prometheus.GaugeValue, float64(n), string(phase))
	}
}
