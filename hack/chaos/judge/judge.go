package judge

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Incarnation is one At object, identified by its UID: an At deleted and
// created again by the same name is two incarnations.
type Incarnation struct {
	UID, Namespace, Name string
	// BackoffLimit is the At's spec.backoffLimit: it may make
	// BackoffLimit+1 attempts.
	BackoffLimit int32
	// Alive is true if the At still exists at the end of the run; the rest
	// of the fields are then its status as the API server holds it.
	Alive    bool
	Phase    string
	Reason   string
	PodName  string
	ExitCode *int32
}

// Verdict is the judgement of a run.
type Verdict struct {
	// Ats is the number of incarnations judged.
	Ats int
	// Pods is the number of Pods created for them.
	Pods int
	// Duplicates is the number of Pods created that the At could not have
	// asked for: more than BackoffLimit+1, or a new attempt although the
	// previous attempt's Pod had not failed or been disrupted before it (it
	// was running, succeeded, never finished, or was deleted while it ran).
	Duplicates int
	// Lost is the number of incarnations still there at the end that do not
	// tell the truth about their run: not terminal, never ran, reporting a
	// run although none of their own Pods exists, reporting a Pod that is not
	// theirs, an outcome other than their last Pod's (Succeeded for a run
	// that was deleted while it ran or disrupted: a false Succeeded), or
	// Failed although their last Pod failed with a retry left (the At has
	// no deadline and is not suspended in a chaos run).
	Lost int
	// Findings say, one line each, what made a Duplicate or a Lost.
	Findings []string
}

// Line is the one line a chaos scenario prints.
func (v Verdict) Line(scenario string) string {
	return fmt.Sprintf("chaos %s: ats=%d pods=%d duplicates=%d lost=%d", scenario, v.Ats, v.Pods, v.Duplicates, v.Lost)
}

// Judge counts the Pods the API server created for each incarnation
// (creates whose controller owner reference is its UID) and checks each
// against what the incarnation may do and what it reports.
func Judge(incarnations []Incarnation, rec Record) Verdict {
	creates := map[string][]PodCreate{}
	for _, c := range rec.Creates {
		if c.OwnerUID != "" {
			creates[c.OwnerUID] = append(creates[c.OwnerUID], c)
		}
	}
	ends := map[string]PodEnd{}
	for _, e := range rec.Ends {
		// The first terminal write is the run's outcome: a terminal phase
		// never changes.
		if prev, ok := ends[e.PodUID]; !ok || (e.Time.Before(prev.Time) && !e.Time.IsZero()) {
			ends[e.PodUID] = e
		}
	}

	var v Verdict
	for _, inc := range incarnations {
		v.Ats++
		own := creates[inc.UID]
		sortCreates(own)
		v.Pods += len(own)
		id := fmt.Sprintf("At %s/%s (uid %s)", inc.Namespace, inc.Name, inc.UID)

		allowed := int(inc.BackoffLimit) + 1
		var attempts []PodCreate // the creates the At could have asked for
		for i, c := range own {
			var why string
			switch {
			case i >= allowed:
				why = fmt.Sprintf("attempt %d of at most %d", i+1, allowed)
			case i > 0:
				prev := own[i-1]
				end, ok := ends[prev.PodUID]
				switch {
				case !ok:
					why = fmt.Sprintf("created while Pod %s (uid %s) had not finished", prev.Name, prev.PodUID)
				case end.Deleted && !end.Disrupted:
					why = fmt.Sprintf("created although Pod %s (uid %s) was deleted while it ran", prev.Name, prev.PodUID)
				case end.Phase != corev1.PodFailed && !end.Disrupted:
					why = fmt.Sprintf("created although Pod %s (uid %s) had %s", prev.Name, prev.PodUID, end.Phase)
				case !end.Time.IsZero() && !end.Time.Before(c.Time):
					why = fmt.Sprintf("created before Pod %s (uid %s) failed", prev.Name, prev.PodUID)
				}
			}
			if why != "" {
				v.Duplicates++
				v.Findings = append(v.Findings, fmt.Sprintf("duplicate: %s: Pod %s (uid %s) %s", id, c.Name, c.PodUID, why))
				continue
			}
			attempts = append(attempts, c)
		}

		if !inc.Alive {
			continue
		}
		if why := untruth(inc, own, attempts, ends); why != "" {
			v.Lost++
			v.Findings = append(v.Findings, fmt.Sprintf("lost: %s: %s", id, why))
		}
	}
	sort.Strings(v.Findings)
	return v
}

// untruth says how an incarnation still there at the end fails to tell the
// truth about its run, or returns "". own are all Pods created for it,
// attempts those it could have asked for (a duplicate is counted once, as a
// duplicate, not again as a wrong outcome).
func untruth(inc Incarnation, own, attempts []PodCreate, ends map[string]PodEnd) string {
	switch inc.Phase {
	case "Succeeded", "Failed", "Missed":
	default:
		return fmt.Sprintf("not finished: phase %q, reason %q", inc.Phase, inc.Reason)
	}
	reportsRun := inc.PodName != "" || inc.ExitCode != nil
	if len(own) == 0 {
		if reportsRun {
			return fmt.Sprintf("reports a run (%s, Pod %q) but no Pod was ever created for it", inc.Phase, inc.PodName)
		}
		return fmt.Sprintf("never ran its command (phase %s, reason %q)", inc.Phase, inc.Reason)
	}
	if inc.PodName != "" {
		var names []string
		found := false
		for _, c := range own {
			names = append(names, c.Name)
			found = found || c.Name == inc.PodName
		}
		if !found {
			return fmt.Sprintf("reports Pod %q, which is not one of its own (%s)", inc.PodName, strings.Join(names, ", "))
		}
	}
	last := attempts[len(attempts)-1]
	end, ended := ends[last.PodUID]
	// An interrupted run is never Succeeded, whatever it exited with.
	want := "Failed"
	if ended && end.Phase == corev1.PodSucceeded && !end.Deleted && !end.Disrupted {
		want = "Succeeded"
	}
	if inc.Phase != want {
		did := "never finished"
		if ended {
			did = string(end.Phase)
		}
		return fmt.Sprintf("reports %s (reason %q) but its last Pod %s (uid %s) %s", inc.Phase, inc.Reason, last.Name, last.PodUID, did)
	}
	if ended && (end.Phase == corev1.PodFailed || end.Disrupted) && !(end.Deleted && !end.Disrupted) && len(own) < int(inc.BackoffLimit)+1 {
		return fmt.Sprintf("reports %s (reason %q) after its Pod %s (uid %s) failed with %d of %d attempts made: the retry it was owed never ran",
			inc.Phase, inc.Reason, last.Name, last.PodUID, len(own), inc.BackoffLimit+1)
	}
	if ended && end.ExitCode != nil && inc.ExitCode != nil && *end.ExitCode != *inc.ExitCode {
		return fmt.Sprintf("reports exit code %d but its last Pod %s (uid %s) exited %d", *inc.ExitCode, last.Name, last.PodUID, *end.ExitCode)
	}
	return ""
}
