package judge

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestCount(t *testing.T) {
	tests := map[string]struct {
		outcomes []Outcome
		want     Verdict
	}{
		"all ran once and finished": {
			outcomes: []Outcome{{Name: "a", Runs: 1, Allowed: 1, Terminal: true}, {Name: "b", Runs: 2, Allowed: 2, Terminal: true}},
			want:     Verdict{Ats: 2, Pods: 3},
		},
		"a second Pod for one attempt is a duplicate": {
			outcomes: []Outcome{{Name: "a", Runs: 2, Allowed: 1, Terminal: true}},
			want:     Verdict{Ats: 1, Pods: 2, Duplicates: 1, Findings: []string{"duplicate: a: 2 runs, 1 allowed"}},
		},
		"a Pod the status does not count is a duplicate": {
			outcomes: []Outcome{{Name: "a", Runs: 1, Allowed: 0, Terminal: true}},
			want:     Verdict{Ats: 1, Pods: 1, Duplicates: 1, Findings: []string{"duplicate: a: 1 runs, 0 allowed"}},
		},
		"finished without a Pod is lost": {
			outcomes: []Outcome{{Name: "a", Runs: 0, Allowed: 0, Terminal: true}},
			want:     Verdict{Ats: 1, Lost: 1, Findings: []string{"lost: a: never ran"}},
		},
		"not finished by the end is lost": {
			outcomes: []Outcome{{Name: "a", Runs: 1, Allowed: 1}},
			want:     Verdict{Ats: 1, Pods: 1, Lost: 1, Findings: []string{"lost: a: not finished"}},
		},
		"both at once": {
			outcomes: []Outcome{{Name: "a", Runs: 3, Allowed: 1}},
			want:     Verdict{Ats: 1, Pods: 3, Duplicates: 1, Lost: 1, Findings: []string{"duplicate: a: 3 runs, 1 allowed", "lost: a: not finished"}},
		},
		"findings are capped, counts are not": {
			outcomes: []Outcome{{Name: "g"}, {Name: "f"}, {Name: "e"}, {Name: "d"}, {Name: "c"}, {Name: "b"}, {Name: "a"}},
			want: Verdict{Ats: 7, Lost: 7, Findings: []string{
				"lost: a: never ran", "lost: b: never ran", "lost: c: never ran", "lost: d: never ran", "lost: e: never ran",
			}},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			v := Count(tt.outcomes)
			g.Expect(v).To(BeComparableTo(tt.want))
			g.Expect(v.Failed()).To(Equal(tt.want.Duplicates > 0 || tt.want.Lost > 0))
		})
	}
}
