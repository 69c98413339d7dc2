package main

import (
	"math"
	"slices"
	"time"
)

// Distribution summarises a sample of durations (lateness, time to
// terminal) by the nearest-rank percentiles a reader compares across rows.
type Distribution struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50Seconds"`
	P90   float64 `json:"p90Seconds"`
	P99   float64 `json:"p99Seconds"`
	Max   float64 `json:"maxSeconds"`
}

// summarize returns the distribution of samples. An empty sample gives a
// zero Distribution (Count 0), which the table shows as "—".
func summarize(samples []time.Duration) Distribution {
	if len(samples) == 0 {
		return Distribution{}
	}
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	return Distribution{
		Count: len(sorted),
		P50:   percentile(sorted, 50).Seconds(),
		P90:   percentile(sorted, 90).Seconds(),
		P99:   percentile(sorted, 99).Seconds(),
		Max:   sorted[len(sorted)-1].Seconds(),
	}
}

// percentile returns the p-th percentile (0 < p <= 100) of an ascending,
// non-empty sample by the nearest-rank method: the smallest value such that
// at least p % of the sample is at or below it. It never interpolates, so
// every percentile is a value that was measured.
func percentile(sorted []time.Duration, p float64) time.Duration {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = max(1, min(rank, len(sorted)))
	return sorted[rank-1]
}

// seconds converts durations to seconds, the unit of .local/bench.json.
func seconds(samples []time.Duration) []float64 {
	out := make([]float64, len(samples))
	for i, d := range samples {
		out[i] = math.Round(d.Seconds()*1e6) / 1e6
	}
	return out
}
