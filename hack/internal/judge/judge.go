package judge

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Incarnation is one At object, identified by its UID: an At deleted and
// created again by the same name is two incarnations.
type Incarnation struct {
	UID, Namespace, Name string
	// BackoffLimit is the At's spec.backoffLimit: it may make
	// BackoffLimit+1 attempts, and one more for each attempt disrupted
	// before its command started.
	BackoffLimit int32
	// Due is when the At fires (its schedule); zero if unknown.
	Due time.Time
	// Deadline is set when the At has a startingDeadlineSeconds: Missed,
	// with no Pod ever created, is then a truthful end.
	Deadline bool
	// Expect is the phase the scenario knows the At must end in (Missed,
	// for one whose Pods were refused past its deadline); empty: whatever
	// its Pods say.
	Expect string
	// Samples are how the At stood at moments of the run (see Silent).
	Samples []Sample
	// Alive is true if the At still exists at the end of the run; the rest
	// of the fields are then its status as the API server holds it.
	Alive    bool
	Phase    string
	Reason   string
	PodName  string
	ExitCode *int32
}

// Sample is how an At stood at one moment, as the API server held it: its
// phase and reason, and whether a Pod of its own (controller owner reference
// of kind At with its UID: RunOwner) existed. The harness lists the Ats, then the Pods: a Pod the At
// had when it was listed is in the Pod list too (it carries cnat's tracking
// finalizer until its run is recorded).
type Sample struct {
	Time   time.Time
	Phase  string
	Reason string
	HasPod bool
}

// SilentAfter is how long after its time an At may go without a Pod and
// without a reason that says why: the README promises that a refused Pod is
// reported at once; 20 s is what a burst of 200 refusals may take.
const SilentAfter = 20 * time.Second

// explains are the status reasons that say why an At that is due has no
// Pod: its Pod was refused (by admission, for its fields as the namespace
// shapes them now, or because its author may no longer create Pods), its
// Pod's name is taken, it missed its deadline.
var explains = map[string]bool{
	"PodForbidden": true, "PodCreateFailed": true, "PodInvalid": true, "AuthorForbidden": true,
	"PodNameTaken": true, "Missed": true,
}

// started are the phases of an At that started its run (or ended).
var started = map[string]bool{"Running": true, "Succeeded": true, "Failed": true, "Missed": true}

// Verdict is the judgement of a run: of a chaos scenario or an upgrade
// (Judge), or of a bench stage (Count, whose units are Ats, CronJobs or raw
// Pods). Every count but Ats and Pods must be 0.
type Verdict struct {
	// Ats is the number of incarnations (units) judged.
	Ats int `json:"ats"`
	// Pods is the number of Pods (runs) created for them.
	Pods int `json:"pods"`
	// Duplicates is the number of Pods created that the At could not have
	// asked for: more than BackoffLimit+1 (plus one for each earlier Pod
	// disrupted before its command started), or a new attempt although the
	// previous attempt's Pod had not failed or been disrupted before it (it
	// was running, succeeded, never finished, or was deleted while it ran).
	Duplicates int `json:"duplicates"`
	// Lost is the number of incarnations still there at the end that do not
	// tell the truth about their run, other than a false Succeeded: not
	// terminal, never ran, Failed reporting a run although none of their own
	// Pods exists or a Pod that is not theirs, an outcome other than their
	// last Pod's, Failed although their last Pod failed with a retry left
	// (the At is not suspended in a chaos run), Missed although it had no
	// deadline, or not the phase the scenario expects.
	Lost int `json:"lost"`
	// Silent is the number of incarnations that, sampled SilentAfter or
	// more after their time, had no Pod and a status that did not say why
	// (a phase that has not started, and a reason other than PodForbidden,
	// PodCreateFailed, PodInvalid, AuthorForbidden, PodNameTaken or Missed).
	Silent int `json:"silent"`
	// FalseSucceeded is the number of incarnations still there at the end
	// that are Succeeded although the run they report was interrupted
	// (deleted while it ran, disrupted), failed, or never happened (no Pod of
	// their own, or a Pod that is not theirs).
	FalseSucceeded int `json:"falseSucceeded"`
	// Findings say, one line each, what made a Duplicate, a Lost, a Silent
	// or a FalseSucceeded.
	Findings []string `json:"findings,omitempty"`
}

// Failed reports whether the verdict breaks a promise.
func (v Verdict) Failed() bool {
	return v.Duplicates > 0 || v.Lost > 0 || v.Silent > 0 || v.FalseSucceeded > 0
}

// Line is the one line a chaos scenario prints.
func (v Verdict) Line(scenario string) string {
	return fmt.Sprintf("chaos %s: ats=%d pods=%d duplicates=%d lost=%d silent=%d falseSucceeded=%d",
		scenario, v.Ats, v.Pods, v.Duplicates, v.Lost, v.Silent, v.FalseSucceeded)
}

// Judge counts the Pods the API server created for each incarnation
// (creates whose controller owner reference is its UID) and checks each
// against what the incarnation may do, what it reports, and how it stood
// while it was due.
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

		if why := silent(inc); why != "" {
			v.Silent++
			v.Findings = append(v.Findings, fmt.Sprintf("silent: %s: %s", id, why))
		}

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
			// An attempt disrupted before its command started does not use
			// up one the At may make.
			if ends[c.PodUID].Unstarted {
				allowed++
			}
		}

		if !inc.Alive {
			continue
		}
		if why, falseSucceeded := untruth(inc, own, attempts, ends); why != "" {
			if falseSucceeded {
				v.FalseSucceeded++
				v.Findings = append(v.Findings, fmt.Sprintf("falseSucceeded: %s: %s", id, why))
			} else {
				v.Lost++
				v.Findings = append(v.Findings, fmt.Sprintf("lost: %s: %s", id, why))
			}
		}
	}
	sort.Strings(v.Findings)
	return v
}

// silent says when an incarnation, due for SilentAfter or more, had neither
// a Pod nor a status that says why, or returns "".
func silent(inc Incarnation) string {
	if inc.Due.IsZero() {
		return ""
	}
	for _, s := range inc.Samples {
		if s.Time.Before(inc.Due.Add(SilentAfter)) || s.HasPod || started[s.Phase] || explains[s.Reason] {
			continue
		}
		return fmt.Sprintf("%s after its time (%s): no Pod, phase %q, reason %q",
			s.Time.Sub(inc.Due).Round(100*time.Millisecond), inc.Due.UTC().Format(time.RFC3339), s.Phase, s.Reason)
	}
	return ""
}

// untruth says how an incarnation still there at the end fails to tell the
// truth about its run, or returns "", and whether the untruth is a false
// Succeeded. own are all Pods created for it, attempts those it could have
// asked for (a duplicate is counted once, as a duplicate, not again as a
// wrong outcome).
func untruth(inc Incarnation, own, attempts []PodCreate, ends map[string]PodEnd) (why string, falseSucceeded bool) {
	succeeded := inc.Phase == "Succeeded"
	switch inc.Phase {
	case "Succeeded", "Failed", "Missed":
	default:
		return fmt.Sprintf("not finished: phase %q, reason %q", inc.Phase, inc.Reason), false
	}
	if inc.Expect != "" && inc.Phase != inc.Expect {
		return fmt.Sprintf("ends %s (reason %q), the scenario expects %s", inc.Phase, inc.Reason, inc.Expect), false
	}
	reportsRun := inc.PodName != "" || inc.ExitCode != nil
	if len(own) == 0 {
		if reportsRun {
			return fmt.Sprintf("reports a run (%s, Pod %q) but no Pod was ever created for it", inc.Phase, inc.PodName), succeeded
		}
		if inc.Phase == "Missed" && inc.Deadline {
			return "", false
		}
		return fmt.Sprintf("never ran its command (phase %s, reason %q)", inc.Phase, inc.Reason), succeeded
	}
	if inc.PodName != "" {
		var names []string
		found := false
		for _, c := range own {
			names = append(names, c.Name)
			found = found || c.Name == inc.PodName
		}
		if !found {
			return fmt.Sprintf("reports Pod %q, which is not one of its own (%s)", inc.PodName, strings.Join(names, ", ")), succeeded
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
			switch {
			case end.Disrupted:
				did += ", disrupted"
			case end.Deleted:
				did += ", deleted while it ran"
			}
		}
		return fmt.Sprintf("reports %s (reason %q) but its last Pod %s (uid %s) %s", inc.Phase, inc.Reason, last.Name, last.PodUID, did), succeeded
	}
	// Pods that count against backoffLimit: not disrupted before their
	// command started (a duplicate that ran counts: its run happened).
	counted := 0
	for _, c := range own {
		if !ends[c.PodUID].Unstarted {
			counted++
		}
	}
	failed := ended && (end.Phase == corev1.PodFailed || end.Disrupted) && (!end.Deleted || end.Disrupted)
	if failed && (end.Unstarted || counted < int(inc.BackoffLimit)+1) {
		return fmt.Sprintf("reports %s (reason %q) after its Pod %s (uid %s) failed with %d of %d attempts used: the retry it was owed never ran",
			inc.Phase, inc.Reason, last.Name, last.PodUID, counted, inc.BackoffLimit+1), false
	}
	return exitCodeUntruth(inc, attempts, ends), false
}

// exitCodeUntruth says how the exit code an incarnation reports differs
// from its Pods', or returns "". Its last Pod's exit code, when that Pod has
// one, must be the one it reports; when its last Pod has none (disrupted
// before its command started), what it reports must be the latest exit code
// one of its Pods did exit with, or none.
func exitCodeUntruth(inc Incarnation, attempts []PodCreate, ends map[string]PodEnd) string {
	show := func(code *int32) string {
		if code == nil {
			return "none"
		}
		return fmt.Sprint(*code)
	}
	last := attempts[len(attempts)-1]
	if code := ends[last.PodUID].ExitCode; code != nil {
		if inc.ExitCode == nil || *inc.ExitCode != *code {
			return fmt.Sprintf("reports exit code %s but its last Pod %s (uid %s) exited %d", show(inc.ExitCode), last.Name, last.PodUID, *code)
		}
		return ""
	}
	if inc.ExitCode == nil {
		return ""
	}
	var latest *int32
	for _, c := range attempts {
		if code := ends[c.PodUID].ExitCode; code != nil {
			latest = code
		}
	}
	if latest == nil || *latest != *inc.ExitCode {
		return fmt.Sprintf("reports exit code %d but its last Pod %s (uid %s) has none, and the latest its Pods exited with is %s",
			*inc.ExitCode, last.Name, last.PodUID, show(latest))
	}
	return ""
}
