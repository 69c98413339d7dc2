package scheduler_test

import (
	"math"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/programming-kubernetes/cnat/internal/scheduler"
)

func TestRetryDelay(t *testing.T) {
	tests := []struct {
		name   string
		failed int32
		want   time.Duration
	}{
		{name: "negative", failed: -1, want: 0},
		{name: "nothing failed", failed: 0, want: 0},
		{name: "first failure", failed: 1, want: 10 * time.Second},
		{name: "second failure", failed: 2, want: 20 * time.Second},
		{name: "third failure", failed: 3, want: 40 * time.Second},
		{name: "fourth failure", failed: 4, want: 80 * time.Second},
		{name: "fifth failure", failed: 5, want: 160 * time.Second},
		{name: "last doubling", failed: 6, want: 320 * time.Second},
		{name: "capped", failed: 7, want: 6 * time.Minute},
		{name: "stays capped", failed: 8, want: 6 * time.Minute},
		{name: "many failures", failed: 100, want: 6 * time.Minute},
		{name: "most failures", failed: math.MaxInt32, want: 6 * time.Minute},
		{name: "fewest failures", failed: math.MinInt32, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(scheduler.RetryDelay(tt.failed)).To(Equal(tt.want))
		})
	}
}
