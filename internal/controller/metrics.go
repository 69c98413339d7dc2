package controller

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/atcache"
)

// Metrics are cnat's own Prometheus metrics, beside controller-runtime's.
type Metrics struct {
	// FiringLateness is how late first attempts start: Pod created minus
	// scheduled time.
	FiringLateness prometheus.Histogram
	// Runs counts Ats that finished, by outcome, each exported from 0 so an
	// alert sees the first increase.
	Runs *prometheus.CounterVec

	registry prometheus.Registerer
}

// outcomes are the label values of cnat_runs_total.
var outcomes = []cnatv1beta1.Phase{cnatv1beta1.PhaseSucceeded, cnatv1beta1.PhaseFailed, cnatv1beta1.PhaseMissed}

// NewMetrics creates cnat's metrics and registers them; SetupWithManager adds
// the At cache's collector.
func NewMetrics(registry prometheus.Registerer) *Metrics {
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
		registry: registry,
	}
	for _, outcome := range outcomes {
		m.Runs.WithLabelValues(string(outcome))
	}
	registry.MustRegister(m.FiringLateness, m.Runs)
	return m
}

// countAts registers the collector of the Ats in the store (cnat_ats,
// cnat_pending_ats).
func (m *Metrics) countAts(ats *atcache.Store) {
	if m != nil {
		m.registry.MustRegister(ats.Collector())
	}
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
