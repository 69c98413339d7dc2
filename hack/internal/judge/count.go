package judge

import (
	"fmt"
	"sort"
)

// Outcome is what the bench saw of one unit of work — an At, a CronJob's
// run, or a raw Pod — from its informers, where no audit log is read.
type Outcome struct {
	// Name identifies the unit in findings.
	Name string
	// Runs is how many Pods (for an At or a Job) or Jobs (for a CronJob)
	// were created for it, counted by the controller owner reference's UID,
	// deleted ones included.
	Runs int
	// Allowed is how many runs the unit may have: for an At its
	// status.attempts, for a CronJob due once 1.
	Allowed int
	// Terminal is true once the unit finished (At phase Succeeded, Failed or
	// Missed; Job Complete or Failed; Pod Succeeded or Failed).
	Terminal bool
}

// countFindings is how many findings of each kind Count names: the counts
// are exact, the names examples.
const countFindings = 5

// Count judges outcomes in the terms of Judge's Verdict: a unit with more
// runs than allowed is a Duplicate; one with no run, or not terminal by the
// end, is Lost. Ats counts the units, Pods their runs.
func Count(outcomes []Outcome) Verdict {
	v := Verdict{Ats: len(outcomes)}
	var duplicates, lost []string
	for _, o := range outcomes {
		v.Pods += o.Runs
		if o.Runs > o.Allowed {
			v.Duplicates++
			duplicates = append(duplicates, fmt.Sprintf("duplicate: %s: %d runs, %d allowed", o.Name, o.Runs, o.Allowed))
		}
		switch {
		case o.Runs == 0:
			v.Lost++
			lost = append(lost, fmt.Sprintf("lost: %s: never ran", o.Name))
		case !o.Terminal:
			v.Lost++
			lost = append(lost, fmt.Sprintf("lost: %s: not finished", o.Name))
		}
	}
	for _, f := range [][]string{duplicates, lost} {
		sort.Strings(f)
		v.Findings = append(v.Findings, f[:min(len(f), countFindings)]...)
	}
	return v
}
