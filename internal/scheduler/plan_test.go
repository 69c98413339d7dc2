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

func TestPlanDecide(t *testing.T) {
	g := NewWithT(t)
	scheduled := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	deadline := func(seconds int64) *int64 { return &seconds }
	berlin, err := time.LoadLocation("Europe/Berlin")
	g.Expect(err).NotTo(HaveOccurred())

	tests := []struct {
		name string
		plan scheduler.Plan
		now  time.Time
		want scheduler.Decision
	}{
		{
			name: "long before",
			plan: scheduler.Plan{ScheduledTime: scheduled},
			now:  scheduled.Add(-36 * time.Hour),
			want: scheduler.Decision{Action: scheduler.Wait, After: 36 * time.Hour},
		},
		{
			name: "1ns before",
			plan: scheduler.Plan{ScheduledTime: scheduled},
			now:  scheduled.Add(-time.Nanosecond),
			want: scheduler.Decision{Action: scheduler.Wait, After: time.Nanosecond},
		},
		{
			name: "exactly at the scheduled time",
			plan: scheduler.Plan{ScheduledTime: scheduled},
			now:  scheduled,
			want: scheduler.Decision{Action: scheduler.Fire},
		},
		{
			name: "1ns after",
			plan: scheduler.Plan{ScheduledTime: scheduled},
			now:  scheduled.Add(time.Nanosecond),
			want: scheduler.Decision{Action: scheduler.Fire, Lateness: time.Nanosecond},
		},
		{
			name: "years late without deadline",
			plan: scheduler.Plan{ScheduledTime: scheduled},
			now:  scheduled.AddDate(10, 0, 0),
			want: scheduler.Decision{Action: scheduler.Fire, Lateness: scheduled.AddDate(10, 0, 0).Sub(scheduled)},
		},
		{
			name: "same instant in another zone",
			plan: scheduler.Plan{ScheduledTime: scheduled},
			now:  scheduled.In(berlin),
			want: scheduler.Decision{Action: scheduler.Fire},
		},
		{
			name: "1ns before with deadline",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(300)},
			now:  scheduled.Add(-time.Nanosecond),
			want: scheduler.Decision{Action: scheduler.Wait, After: time.Nanosecond},
		},
		{
			name: "exactly at the scheduled time with deadline",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(300)},
			now:  scheduled,
			want: scheduler.Decision{Action: scheduler.Fire},
		},
		{
			name: "within deadline",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(300)},
			now:  scheduled.Add(time.Minute),
			want: scheduler.Decision{Action: scheduler.Fire, Lateness: time.Minute},
		},
		{
			name: "exactly at the deadline",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(300)},
			now:  scheduled.Add(5 * time.Minute),
			want: scheduler.Decision{Action: scheduler.Fire, Lateness: 5 * time.Minute},
		},
		{
			name: "less than a second after the deadline: whole seconds count",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(300)},
			now:  scheduled.Add(5*time.Minute + 999*time.Millisecond),
			want: scheduler.Decision{Action: scheduler.Fire, Lateness: 5*time.Minute + 999*time.Millisecond},
		},
		{
			name: "one second after the deadline",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(300)},
			now:  scheduled.Add(5*time.Minute + time.Second),
			want: scheduler.Decision{Action: scheduler.Miss, Lateness: 5*time.Minute + time.Second},
		},
		{
			name: "zero deadline exactly at the scheduled time",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(0)},
			now:  scheduled,
			want: scheduler.Decision{Action: scheduler.Fire},
		},
		{
			name: "zero deadline within the second it was due",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(0)},
			now:  scheduled.Add(10 * time.Millisecond),
			want: scheduler.Decision{Action: scheduler.Fire, Lateness: 10 * time.Millisecond},
		},
		{
			name: "zero deadline a second late",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(0)},
			now:  scheduled.Add(time.Second),
			want: scheduler.Decision{Action: scheduler.Miss, Lateness: time.Second},
		},
		{
			name: "zero deadline, fractional schedule, 0.9s late",
			plan: scheduler.Plan{ScheduledTime: scheduled.Add(500 * time.Millisecond), StartingDeadlineSeconds: deadline(0)},
			now:  scheduled.Add(1400 * time.Millisecond),
			want: scheduler.Decision{Action: scheduler.Fire, Lateness: 900 * time.Millisecond},
		},
		{
			name: "negative deadline counts as zero",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(-60)},
			now:  scheduled.Add(time.Nanosecond),
			want: scheduler.Decision{Action: scheduler.Fire, Lateness: time.Nanosecond},
		},
		{
			name: "negative deadline a second late",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(-60)},
			now:  scheduled.Add(time.Second),
			want: scheduler.Decision{Action: scheduler.Miss, Lateness: time.Second},
		},
		{
			name: "deadline beyond what a Duration holds does not overflow",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(9_300_000_000)},
			now:  scheduled.Add(24 * time.Hour),
			want: scheduler.Decision{Action: scheduler.Fire, Lateness: 24 * time.Hour},
		},
		{
			name: "suspended before",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(300), Suspend: true},
			now:  scheduled.Add(-time.Hour),
			want: scheduler.Decision{Action: scheduler.Suspended},
		},
		{
			name: "suspended exactly at the scheduled time",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(300), Suspend: true},
			now:  scheduled,
			want: scheduler.Decision{Action: scheduler.Suspended},
		},
		{
			name: "suspended after the deadline",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(300), Suspend: true},
			now:  scheduled.Add(time.Hour),
			want: scheduler.Decision{Action: scheduler.Suspended},
		},
		{
			name: "resumed within the deadline",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(300)},
			now:  scheduled.Add(4 * time.Minute),
			want: scheduler.Decision{Action: scheduler.Fire, Lateness: 4 * time.Minute},
		},
		{
			name: "resumed after the deadline",
			plan: scheduler.Plan{ScheduledTime: scheduled, StartingDeadlineSeconds: deadline(300)},
			now:  scheduled.Add(time.Hour),
			want: scheduler.Decision{Action: scheduler.Miss, Lateness: time.Hour},
		},
		{
			name: "lateness saturates",
			plan: scheduler.Plan{ScheduledTime: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)},
			now:  scheduled,
			want: scheduler.Decision{Action: scheduler.Fire, Lateness: math.MaxInt64},
		},
		{
			name: "waiting saturates",
			plan: scheduler.Plan{ScheduledTime: time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)},
			now:  scheduled,
			want: scheduler.Decision{Action: scheduler.Wait, After: math.MaxInt64},
		},
		{
			name: "centuries late within the largest deadline",
			plan: scheduler.Plan{ScheduledTime: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), StartingDeadlineSeconds: deadline(math.MaxInt64)},
			now:  scheduled,
			want: scheduler.Decision{Action: scheduler.Fire, Lateness: math.MaxInt64},
		},
		{
			name: "centuries late past a deadline longer than a Duration",
			plan: scheduler.Plan{ScheduledTime: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), StartingDeadlineSeconds: deadline(400 * 365 * 24 * 3600)},
			now:  scheduled,
			want: scheduler.Decision{Action: scheduler.Miss, Lateness: math.MaxInt64},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tt.plan.Decide(tt.now)).To(BeComparableTo(tt.want, actionNames), "Decide(%v)", tt.now)
		})
	}
}

// actionNames shows the actions by name in a diff.
var actionNames = cmp.Transformer("name", func(a scheduler.Action) string {
	if name, ok := map[scheduler.Action]string{scheduler.Wait: "Wait", scheduler.Fire: "Fire", scheduler.Miss: "Miss", scheduler.Suspended: "Suspended"}[a]; ok {
		return name
	}
	return fmt.Sprintf("Action(%d)", a)
})
