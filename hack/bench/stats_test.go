package main

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func ms(v ...int) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x) * time.Millisecond
	}
	return out
}

func TestSummarize(t *testing.T) {
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // 100, 99, ..., 1: unsorted on purpose
	}
	tests := map[string]struct {
		samples []time.Duration
		want    Distribution
	}{
		"empty": {samples: nil, want: Distribution{}},
		"one":   {samples: ms(1500), want: Distribution{Count: 1, P50: 1.5, P90: 1.5, P99: 1.5, Max: 1.5}},
		// Nearest rank: p50 of four values is the second, never a mean.
		"four":    {samples: ms(4000, 1000, 3000, 2000), want: Distribution{Count: 4, P50: 2, P90: 4, P99: 4, Max: 4}},
		"hundred": {samples: ms(hundred...), want: Distribution{Count: 100, P50: 0.05, P90: 0.09, P99: 0.099, Max: 0.1}},
		// One slow unit in a thousand shows at max, not at p99.
		"one outlier in a thousand": {
			samples: append(ms(make([]int, 999)...), 30*time.Second),
			want:    Distribution{Count: 1000, Max: 30},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(summarize(tt.samples)).To(BeComparableTo(tt.want))
		})
	}
}

func TestSummarizeLeavesSamplesAlone(t *testing.T) {
	g := NewWithT(t)
	samples := ms(3, 1, 2)
	summarize(samples)
	g.Expect(samples).To(BeComparableTo(ms(3, 1, 2)), "summarize() reordered its input")
}
