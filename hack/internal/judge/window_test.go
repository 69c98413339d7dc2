package judge

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestKillsInWindow(t *testing.T) {
	g := NewWithT(t)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	rec := Record{
		Creates: []PodCreate{
			{PodUID: "p1", Namespace: "chaos", Name: "x-1", OwnerUID: "a1", OwnerName: "x", Time: at(1000)},
			{PodUID: "p2", Namespace: "chaos", Name: "y-1", OwnerUID: "a2", OwnerName: "y", Time: at(3000)},
			{PodUID: "f1", Namespace: "chaos", Name: "foreign", Time: at(5000)},
		},
		AtStatusWrites: []AtStatusWrite{
			{Namespace: "chaos", Name: "x", Time: at(500)}, // before its Pod: not the one that records it
			{Namespace: "chaos", Name: "x", Time: at(1200)},
			{Namespace: "chaos", Name: "y", Time: at(3100)},
		},
	}
	g.Expect(KillsInWindow([]time.Time{at(400)}, rec)).To(Equal(0), "before any Pod")
	g.Expect(KillsInWindow([]time.Time{at(1100)}, rec)).To(Equal(1), "between x-1's create and x's status write")
	g.Expect(KillsInWindow([]time.Time{at(1500), at(2900)}, rec)).To(Equal(0), "after the write, before the next create")
	g.Expect(KillsInWindow([]time.Time{at(5500)}, rec)).To(Equal(0), "a Pod with no At owner has no window")
	g.Expect(KillsInWindow([]time.Time{at(1100), at(1150), at(3050), at(4000)}, rec)).To(Equal(3))
	// A create whose At status was never written after it: its window
	// stays open.
	rec.AtStatusWrites = rec.AtStatusWrites[:2]
	g.Expect(KillsInWindow([]time.Time{at(4000)}, rec)).To(Equal(1))
}
