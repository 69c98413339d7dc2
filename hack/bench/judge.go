package main

import "slices"

// Outcome is what the bench observed of one unit of work: an At, a
// CronJob's run, or a raw Pod.
type Outcome struct {
	// Name identifies the unit in reports.
	Name string
	// Runs is how many Pods (for an At or a Job) or Jobs (for a CronJob) the
	// bench saw created for it, counted by the controller owner reference's
	// UID, deleted ones included.
	Runs int
	// Allowed is how many runs the unit may have: for an At its
	// status.attempts, for a CronJob due once 1.
	Allowed int
	// Terminal is true once the unit finished (At phase Succeeded, Failed or
	// Missed; Job Complete or Failed; Pod Succeeded or Failed).
	Terminal bool
}

// Verdict counts the units the controller got wrong. Both must be 0.
type Verdict struct {
	// Duplicates ran more often than allowed.
	Duplicates int `json:"duplicates"`
	// Lost never ran or had not finished by the end of the stage.
	Lost int `json:"lost"`
	// Examples name up to five of each, for the report.
	DuplicateExamples []string `json:"duplicateExamples,omitempty"`
	LostExamples      []string `json:"lostExamples,omitempty"`
}

const verdictExamples = 5

// judge returns the verdict over outcomes: a unit with more runs than
// allowed is a duplicate; one with no run, or not terminal, is lost.
func judge(outcomes []Outcome) Verdict {
	var v Verdict
	for _, o := range outcomes {
		if o.Runs > o.Allowed {
			v.Duplicates++
			if len(v.DuplicateExamples) < verdictExamples {
				v.DuplicateExamples = append(v.DuplicateExamples, o.Name)
			}
		}
		if o.Runs == 0 || !o.Terminal {
			v.Lost++
			if len(v.LostExamples) < verdictExamples {
				v.LostExamples = append(v.LostExamples, o.Name)
			}
		}
	}
	slices.Sort(v.DuplicateExamples)
	slices.Sort(v.LostExamples)
	return v
}
