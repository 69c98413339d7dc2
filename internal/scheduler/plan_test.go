package scheduler_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/gomega"

	"github.com/programming-kubernetes/cnat/internal/scheduler"
)

func TestPlanTiming(t *testing.T) {
	g := NewWithT(t)
	scheduled := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	deadline := func(seconds int64) *int64 { return &seconds }
	berlin, err := time.LoadLocation("Europe/Berlin")
	g.Expect(err).NotTo(HaveOccurred())

	tests := []struct {
		name string
		plan scheduler.Plan
		now  time.Time
		want scheduler.Timing
	}{
		{
			name: "long before",
			plan: scheduler.Plan{ScheduledTime: scheduled},
			now:  scheduled.Add(-36 * time.Hour),
			want: scheduler.Early,
		},
		{
			name: "1ns before",
			plan: scheduler.Plan{ScheduledTime: scheduled},
			now:  scheduled.Add(-time.Nanosecond),
			want: scheduler.Early,
		},
		{
			name: "exactly at the scheduled time",
			plan: scheduler.Plan{ScheduledTime: scheduled},
			now:  scheduled,
			want: scheduler.Due,
		},
		{
			name: "1ns after",
			plan: scheduler.Plan{ScheduledTime: scheduled},
			now:  scheduled.Add(time.Nanosecond),
			want: scheduler.Due,
		},
		{
			name: "years late without deadline",
			plan: scheduler.Plan{ScheduledTime: scheduled},
			now:  scheduled.AddDate(10, 0, 0),
			want: scheduler.Due,
		},
		{
			name: "same instant in another zone",
			plan: scheduler.Plan{ScheduledTime: scheduled},
			now:  scheduled.In(berlin),
			want: scheduler.Due,
		},
		{
			name: "1ns before with deadline",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(300)},
			now:  scheduled.Add(-time.Nanosecond),
			want: scheduler.Early,
		},
		{
			name: "exactly at the scheduled time with deadline",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(300)},
			now:  scheduled,
			want: scheduler.Due,
		},
		{
			name: "within deadline",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(300)},
			now:  scheduled.Add(time.Minute),
			want: scheduler.Due,
		},
		{
			name: "exactly at the deadline",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(300)},
			now:  scheduled.Add(5 * time.Minute),
			want: scheduler.Due,
		},
		{
			name: "less than a second after the deadline: whole seconds count",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(300)},
			now:  scheduled.Add(5*time.Minute + 999*time.Millisecond),
			want: scheduler.Due,
		},
		{
			name: "one second after the deadline",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(300)},
			now:  scheduled.Add(5*time.Minute + time.Second),
			want: scheduler.Missed,
		},
		{
			name: "zero deadline exactly at the scheduled time",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(0)},
			now:  scheduled,
			want: scheduler.Due,
		},
		{
			name: "zero deadline within the second it was due",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(0)},
			now:  scheduled.Add(10 * time.Millisecond),
			want: scheduler.Due,
		},
		{
			name: "zero deadline a second late",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(0)},
			now:  scheduled.Add(time.Second),
			want: scheduler.Missed,
		},
		{
			name: "zero deadline, fractional schedule, 0.9s late",
			plan: scheduler.Plan{ScheduledTime: scheduled.Add(500 * time.Millisecond), StartingDeadlineSeconds: deadline(0)},
			now:  scheduled.Add(1400 * time.Millisecond),
			want: scheduler.Due,
		},
		{
			name: "negative deadline counts as zero",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(-60)},
			now:  scheduled.Add(time.Nanosecond),
			want: scheduler.Due,
		},
		{
			name: "negative deadline a second late",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(-60)},
			now:  scheduled.Add(time.Second),
			want: scheduler.Missed,
		},
		{
			name: "deadline beyond what a Duration holds does not overflow",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(9_300_000_000)},
			now:  scheduled.Add(24 * time.Hour),
			want: scheduler.Due,
		},
		{
			name: "suspended before",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(300), Suspend: true},
			now:  scheduled.Add(-time.Hour),
			want: scheduler.Suspended,
		},
		{
			name: "suspended exactly at the scheduled time",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(300), Suspend: true},
			now:  scheduled,
			want: scheduler.Suspended,
		},
		{
			name: "suspended after the deadline",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(300), Suspend: true},
			now:  scheduled.Add(time.Hour),
			want: scheduler.Suspended,
		},
		{
			name: "resumed within the deadline",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(300)},
			now:  scheduled.Add(4 * time.Minute),
			want: scheduler.Due,
		},
		{
			name: "resumed after the deadline",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(300)},
			now:  scheduled.Add(time.Hour),
			want: scheduler.Missed,
		},
		{
			name: "centuries late without deadline",
			plan: scheduler.Plan{ScheduledTime: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)},
			now:  scheduled,
			want: scheduler.Due,
		},
		{
			name: "millennia early",
			plan: scheduler.Plan{ScheduledTime: time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)},
			now:  scheduled,
			want: scheduler.Early,
		},
		{
			name: "centuries late within the largest deadline",
			plan: scheduler.Plan{ScheduledTime: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), StartingDeadlineSeconds: deadline(math.MaxInt64)},
			now:  scheduled,
			want: scheduler.Due,
		},
		{
			name: "centuries late past a deadline longer than a Duration",
			plan: scheduler.Plan{ScheduledTime: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), StartingDeadlineSeconds: deadline(400 * 365 * 24 * 3600)},
			now:  scheduled,
			want: scheduler.Missed,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tt.plan.Timing(tt.now)).To(BeComparableTo(tt.want, timingNames), "Timing(%v)", tt.now)
		})
	}
}

// timingNames shows the timings by name in a diff.
var timingNames = cmp.Transformer("name", func(t scheduler.Timing) string {
	if name, ok := map[scheduler.Timing]string{scheduler.Early: "Early", scheduler.Due: "Due", scheduler.Missed: "Missed", scheduler.Suspended: "Suspended"}[t]; ok {
		return name
	}
	return fmt.Sprintf("Timing(%d)", t)
})
