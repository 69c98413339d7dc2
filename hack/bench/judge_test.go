package main

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestJudge(t *testing.T) {
	tests := map[string]struct {
		outcomes []Outcome
		want     Verdict
	}{
		"all ran once and finished": {
			outcomes: []Outcome{{Name: "a", Runs: 1, Allowed: 1, Terminal: true}, {Name: "b", Runs: 2, Allowed: 2, Terminal: true}},
			want:     Verdict{},
		},
		"a second Pod for one attempt is a duplicate": {
			outcomes: []Outcome{{Name: "a", Runs: 2, Allowed: 1, Terminal: true}},
			want:     Verdict{Duplicates: 1, DuplicateExamples: []string{"a"}},
		},
		"a Pod the status does not count is a duplicate": {
			outcomes: []Outcome{{Name: "a", Runs: 1, Allowed: 0, Terminal: true}},
			want:     Verdict{Duplicates: 1, DuplicateExamples: []string{"a"}},
		},
		"finished without a Pod is lost": {
			outcomes: []Outcome{{Name: "a", Runs: 0, Allowed: 0, Terminal: true}},
			want:     Verdict{Lost: 1, LostExamples: []string{"a"}},
		},
		"not finished by the end is lost": {
			outcomes: []Outcome{{Name: "a", Runs: 1, Allowed: 1}},
			want:     Verdict{Lost: 1, LostExamples: []string{"a"}},
		},
		"both at once": {
			outcomes: []Outcome{{Name: "a", Runs: 3, Allowed: 1}},
			want:     Verdict{Duplicates: 1, Lost: 1, DuplicateExamples: []string{"a"}, LostExamples: []string{"a"}},
		},
		"examples are capped, counts are not": {
			outcomes: []Outcome{{Name: "g"}, {Name: "f"}, {Name: "e"}, {Name: "d"}, {Name: "c"}, {Name: "b"}, {Name: "a"}},
			want:     Verdict{Lost: 7, LostExamples: []string{"c", "d", "e", "f", "g"}},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(judge(tt.outcomes)).To(BeComparableTo(tt.want))
		})
	}
}
