package controller

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// Metrics are cnat's own Prometheus metrics, beside controller-runtime's.
type Metrics struct {
	// FiringLateness is how late first attempts start: Pod created minus
	// scheduled time.
	FiringLateness prometheus.Histogram
	// Runs counts Ats that finished, by outcome (Succeeded, Failed, Missed).
	// Every outcome is exported from the start, at 0, so that the first
	// Failed or Missed At is an increase an alert sees (a series that
	// appears at 1 has no increase).
	Runs *prometheus.CounterVec

	registry prometheus.Registerer
}

// outcomes are the label values of cnat_runs_total.
var outcomes = []cnatv1beta1.Phase{cnatv1beta1.PhaseSucceeded, cnatv1beta1.PhaseFailed, cnatv1beta1.PhaseMissed}

// NewMetrics creates cnat's metrics and registers them; SetupWithManager
// adds the collector of Ats by phase, and of pending Ats by when they are
// due, read from the controller's store of Ats at scrape time.
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

// countAts registers the collector of the Ats in store, on the store's
// clock (the reconciler's).
func (m *Metrics) countAts(store *atStore) {
	if m != nil {
		m.registry.MustRegister(&phaseCollector{ats: store, now: store.clock.Now})
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

// phaseCollector reports the number of Ats in each phase, and the number of
// pending Ats by when they are due. It counts from the store of Ats when
// scraped, so it is never out of step with it and costs the API server
// nothing: one pass over the entries' summaries, no copy, no parsing (the
// due time is the status.scheduledTime the controller wrote).
type phaseCollector struct {
	ats *atStore
	now func() time.Time
}

var (
	atsDesc     = prometheus.NewDesc("cnat_ats", "Ats by phase.", []string{"phase"}, nil)
	pendingDesc = prometheus.NewDesc("cnat_pending_ats", pendingAtsHelp, []string{"due"}, nil)
)

const pendingAtsHelp = "Pending Ats by when they are due: overdue (due, no Pod yet: refused or not yet fired), " +
	"within_1m, within_10m, within_1h, within_1d, later; suspended, invalid (reason InvalidSpec), " +
	"or unknown (no scheduledTime yet: not yet reconciled)."

// dueBuckets are the values of cnat_pending_ats's due label after overdue,
// each counting the pending Ats due in (previous bound, bound]; later counts
// the rest.
var dueBuckets = []struct {
	label string
	bound time.Duration
}{
	{"within_1m", time.Minute},
	{"within_10m", 10 * time.Minute},
	{"within_1h", time.Hour},
	{"within_1d", 24 * time.Hour},
}

// dueLabel is the due label of a pending At at now. A suspended At, or one
// whose spec the controller cannot act on, is not going to run when due:
// each has a label of its own, so that overdue means "cnat should have
// started it".
func dueLabel(at atSummary, now time.Time) string {
	switch {
	case at.invalid:
		return "invalid"
	case at.suspended:
		return "suspended"
	case at.scheduled == 0:
		return "unknown"
	}
	in := time.Unix(0, at.scheduled).Sub(now)
	if in <= 0 {
		return "overdue"
	}
	for _, b := range dueBuckets {
		if in <= b.bound {
			return b.label
		}
	}
	return "later"
}

func (c *phaseCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- atsDesc
	ch <- pendingDesc
}

func (c *phaseCollector) Collect(ch chan<- prometheus.Metric) {
	if !c.ats.listed() {
		return // no counts from half a list: the series are absent until every At is listed
	}
	counts := map[cnatv1beta1.Phase]int{
		cnatv1beta1.PhasePending: 0, cnatv1beta1.PhaseRunning: 0, cnatv1beta1.PhaseSucceeded: 0,
		cnatv1beta1.PhaseFailed: 0, cnatv1beta1.PhaseMissed: 0,
	}
	pending := map[string]int{"overdue": 0, "later": 0, "suspended": 0, "invalid": 0, "unknown": 0}
	for _, b := range dueBuckets {
		pending[b.label] = 0
	}
	now := c.now()
	c.ats.summaries(func(at atSummary) {
		counts[at.phase]++
		if at.phase == cnatv1beta1.PhasePending {
			pending[dueLabel(at, now)]++
		}
	})
	for phase, n := range counts {
		ch <- prometheus.MustNewConstMetric(atsDesc, prometheus.GaugeValue, float64(n), string(phase))
	}
	for due, n := range pending {
		ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(n), due)
	}
}
