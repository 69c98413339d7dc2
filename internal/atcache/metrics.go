package atcache

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/ptr"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// Collector counts the Ats of the store by phase (cnat_ats), and the
// pending ones by when they are due (cnat_pending_ats), at scrape time.
func (s *Store) Collector() prometheus.Collector {
	return &phaseCollector{ats: s, now: s.clock.Now}
}

// atSummary is what the metrics count of an At.
type atSummary struct {
	phase     cnatv1beta1.Phase
	scheduled int64 // status.scheduledTime, Unix nanoseconds; 0: none
	suspended bool
	invalid   bool
}

func summarize(at *cnatv1beta1.At) atSummary {
	s := atSummary{
		suspended: ptr.Deref(at.Spec.Suspend, false),
		invalid:   at.Status.Reason == cnatv1beta1.ReasonInvalidSpec,
	}
	// The phase as the constant, not the decoded string of each At.
	switch p := at.Status.Phase; p {
	case cnatv1beta1.PhasePending, "":
		s.phase = cnatv1beta1.PhasePending
	case cnatv1beta1.PhaseRunning:
		s.phase = cnatv1beta1.PhaseRunning
	case cnatv1beta1.PhaseSucceeded:
		s.phase = cnatv1beta1.PhaseSucceeded
	case cnatv1beta1.PhaseFailed:
		s.phase = cnatv1beta1.PhaseFailed
	case cnatv1beta1.PhaseMissed:
		s.phase = cnatv1beta1.PhaseMissed
	default:
		s.phase = p
	}
	if t := at.Status.ScheduledTime; t != nil {
		s.scheduled = t.UnixNano()
	}
	return s
}

// summaries calls f with the summary of every At.
func (s *Store) summaries(f func(atSummary)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.entries {
		f(e.summary)
	}
}

// phaseCollector counts from the store when scraped: never out of step with
// it, nothing asked of the API server, one pass, no copy.
type phaseCollector struct {
	ats *Store
	now func() time.Time
}

var (
	atsDesc     = prometheus.NewDesc("cnat_ats", "Ats by phase.", []string{"phase"}, nil)
	pendingDesc = prometheus.NewDesc("cnat_pending_ats", pendingAtsHelp, []string{"due"}, nil)
)

const pendingAtsHelp = "Pending Ats by when they are due: overdue (due, no Pod yet: refused or not yet fired), " +
	"within_1m, within_10m, within_1h, within_1d, later; suspended, invalid (reason InvalidSpec), " +
	"or unknown (no scheduledTime yet: not yet reconciled)."

// dueBuckets are cnat_pending_ats's due labels after overdue, each counting
// the Ats due in (previous bound, bound]; later counts the rest.
var dueBuckets = []struct {
	label string
	bound time.Duration
}{
	{"within_1m", time.Minute},
	{"within_10m", 10 * time.Minute},
	{"within_1h", time.Hour},
	{"within_1d", 24 * time.Hour},
}

// dueLabel is the due label of a pending At at now. Suspended and invalid
// Ats have labels of their own: overdue means "cnat should have started it".
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
	if !c.ats.Listed() {
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
