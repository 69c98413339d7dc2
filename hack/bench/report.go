package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Result is one run of the bench: what .local/bench.json holds.
type Result struct {
	Date        time.Time       `json:"date"`
	Command     string          `json:"command"`
	Machine     Machine         `json:"machine"`
	N           int             `json:"n"`
	Concurrency int             `json:"concurrency"`
	Nodes       int             `json:"simulatedNodes"`
	Repeat      int             `json:"repeat"`
	Stages      []*Stage        `json:"stages"`
	Memory      []MemoryReading `json:"memory,omitempty"`
	Admission   []Admission     `json:"admission,omitempty"`
}

// Machine describes where the run happened.
type Machine struct {
	CPU        string `json:"cpu"`
	Cores      int    `json:"cores"`
	MemoryGiB  int    `json:"memoryGiB"`
	Kernel     string `json:"kernel"`
	Kubernetes string `json:"kubernetes"`
	Go         string `json:"go"`
	Commit     string `json:"commit"`
	// LoadAverage is the 1-minute load average when the run began: the
	// machine may be shared, and the numbers move with its load.
	LoadAverage string `json:"loadAverage"`
}

// stage is the named stage of the given round (0: the first one of that
// name).
func (r *Result) stage(name string, round int) *Stage {
	for _, s := range r.Stages {
		if s.Name == name && (round == 0 || s.Round == round) {
			return s
		}
	}
	return nil
}

// label is how tables and the plot name a stage: with its round when the
// run repeated the stages.
func (r *Result) label(s *Stage, title string) string {
	if r.Repeat > 1 {
		return fmt.Sprintf("%s (run %d)", title, s.Round)
	}
	return title
}

// fmtSeconds renders a duration in seconds with the precision a reader
// needs at its size.
func fmtSeconds(s float64) string {
	switch {
	case s < 10:
		return fmt.Sprintf("%.2f s", s)
	case s < 100:
		return fmt.Sprintf("%.1f s", s)
	default:
		return fmt.Sprintf("%.0f s", s)
	}
}

func fmtDistribution(d Distribution) string {
	if d.Count == 0 {
		return "—"
	}
	return fmt.Sprintf("%s / %s / %s / %s", fmtSeconds(d.P50), fmtSeconds(d.P90), fmtSeconds(d.P99), fmtSeconds(d.Max))
}

// ratio renders x against the raw anchor of the same run.
func ratio(x, anchor float64) string { return orDash("%.1f×", x/anchor) }

// orDash renders v with format, or "—" where v is no positive number (no
// reading, or a ratio to none).
func orDash(format string, v float64) string {
	if !(v > 0) || math.IsInf(v, 0) {
		return "—"
	}
	return fmt.Sprintf(format, v)
}

func (s *Stage) terminalCell(raw *Stage) string {
	if !s.AllTerminal {
		finished := s.N - s.Verdict.Lost
		return fmt.Sprintf("not by the end (%d of %d)", finished, s.N)
	}
	cell := "T+" + fmtSeconds(s.AllTerminalSeconds)
	if raw != nil && raw != s && raw.AllTerminal {
		cell += " (" + ratio(s.AllTerminalSeconds, raw.AllTerminalSeconds) + ")"
	}
	return cell
}

// markdownTable renders a GitHub-flavoured Markdown table.
func markdownTable(header []string, rows [][]string) string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(header, " | ") + " |\n")
	b.WriteString("|" + strings.Repeat(" --- |", len(header)) + "\n")
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return b.String()
}

// renderTables renders the run's tables: the side-by-side lateness, the
// controller's usage, the API requests and the memory readings.
func renderTables(r *Result) string {
	var b strings.Builder
	if len(r.Stages) > 0 {
		b.WriteString(renderStages(r))
	}

	if len(r.Admission) > 0 {
		fmt.Fprintf(&b, "\nAdmission: N = %d objects of each kind created at concurrency %d; Pods held by a scheduling gate (created, never scheduled); an At passes cnat's webhooks, and the controller writes its Pending status meanwhile:\n\n", r.N, r.Concurrency)
		b.WriteString(markdownTable([]string{"run", "ConfigMaps / s (no webhooks)", "Pods / s", "Ats / s", "Ats ÷ ConfigMaps", "Ats ÷ Pods"}, admissionRows(r.Admission)))
	}

	if len(r.Memory) > 0 {
		b.WriteString("\nController memory, each reading after a fresh start, once it was idle (listed: the controller had every At):\n\n")
		var mrows [][]string
		dash := func(seconds float64) string {
			if seconds > 0 {
				return fmtSeconds(seconds)
			}
			return "—"
		}
		var canary []string
		for _, m := range r.Memory {
			mrows = append(mrows, []string{m.Situation, mib(m.RSSBytes), mib(m.PeakRSSBytes), dash(m.ListedSeconds), fmtSeconds(m.SettleSeconds), dash(m.CreationSeconds)})
			if m.CanaryLatenessSeconds != nil {
				canary = append(canary, fmt.Sprintf("An At due %s after the restart with %d pending Ats (%s) had its Pod %s after its time.", fmtSeconds(m.CanaryDueSeconds), m.PendingAts, m.Controller, fmtSeconds(*m.CanaryLatenessSeconds)))
			}
		}
		b.WriteString(markdownTable([]string{"situation", "RSS", "peak RSS", "every At listed after", "idle after", "creating the objects took"}, mrows))
		for _, line := range canary {
			b.WriteString("\n" + line + "\n")
		}
	}
	return b.String()
}

// admissionRows are the creation rates of each run, and their medians when
// there were several.
func admissionRows(readings []Admission) [][]string {
	rates := map[int]map[string]float64{}
	var rounds []int
	for _, a := range readings {
		if rates[a.Round] == nil {
			rates[a.Round] = map[string]float64{}
			rounds = append(rounds, a.Round)
		}
		rates[a.Round][a.Kind] = a.PerSecond()
	}
	var rows [][]string
	var toConfigMaps, toPods []float64
	for _, round := range rounds {
		k := rates[round]
		rows = append(rows, []string{fmt.Sprint(round), orDash("%.0f", k[admissionConfigMap]), orDash("%.0f", k[admissionPod]), orDash("%.0f", k[admissionAt]),
			orDash("%.2f", k[admissionAt]/k[admissionConfigMap]), orDash("%.2f", k[admissionAt]/k[admissionPod])})
		if k[admissionAt] > 0 && k[admissionConfigMap] > 0 && k[admissionPod] > 0 {
			toConfigMaps = append(toConfigMaps, k[admissionAt]/k[admissionConfigMap])
			toPods = append(toPods, k[admissionAt]/k[admissionPod])
		}
	}
	if len(rounds) > 1 {
		rows = append(rows, []string{"median [range]", "", "", "", spread(toConfigMaps, "%.2f"), spread(toPods, "%.2f")})
	}
	return rows
}

// pairing is a stage compared with an anchor stage of the same round.
type pairing struct{ name, anchor string }

// pairings are the comparisons a run supports: every stage with the raw
// stage of its round, and cnat with the floor and the Job stages.
func pairings(r *Result) []pairing {
	var names []string
	for _, s := range r.Stages {
		if !slices.Contains(names, s.Name) {
			names = append(names, s.Name)
		}
	}
	var out []pairing
	for _, name := range names {
		if name != "raw" && slices.Contains(names, "raw") {
			out = append(out, pairing{name, "raw"})
		}
	}
	for _, anchor := range []string{"floor", "job"} {
		if slices.Contains(names, "cnat") && slices.Contains(names, anchor) {
			out = append(out, pairing{"cnat", anchor})
		}
	}
	return out
}

// pairedRows are, per pairing, the median and the spread over the rounds
// of each ratio to the anchor of the same round, and for the pairings with
// the raw stage the writes per unit.
func pairedRows(r *Result) [][]string {
	var rows [][]string
	for _, p := range pairings(r) {
		var p99, terminal, cpu, cpuAfterT, writes []float64
		for _, s := range r.Stages {
			anchor := r.stage(p.anchor, s.Round)
			if s.Name != p.name || anchor == nil {
				continue
			}
			writes = append(writes, s.WritesPerUnit)
			if anchor.FirstPod.P99 > 0 && s.FirstPod.P99 > 0 {
				p99 = append(p99, s.FirstPod.P99/anchor.FirstPod.P99)
			}
			if s.AllTerminal && anchor.AllTerminal && anchor.AllTerminalSeconds > 0 {
				terminal = append(terminal, s.AllTerminalSeconds/anchor.AllTerminalSeconds)
			}
			if anchor.APIServerCPUSeconds > 0 && s.APIServerCPUSeconds > 0 {
				cpu = append(cpu, s.cpuPerUnit()/anchor.cpuPerUnit())
			}
			if anchor.cpuPerUnitAfterT() > 0 && s.cpuPerUnitAfterT() > 0 {
				cpuAfterT = append(cpuAfterT, s.cpuPerUnitAfterT()/anchor.cpuPerUnitAfterT())
			}
		}
		writesCell := ""
		if p.anchor == "raw" {
			writesCell = spread(writes, "%.2f")
		}
		rows = append(rows, []string{p.name + " ÷ " + p.anchor, spread(p99, "%.2f×"), spread(terminal, "%.2f×"), spread(cpu, "%.2f×"), spread(cpuAfterT, "%.2f×"), writesCell})
	}
	return rows
}

// cpuPerUnit is the API server's CPU per unit over the whole stage.
func (s *Stage) cpuPerUnit() float64 { return s.APIServerCPUSeconds / float64(s.N) }

// cpuPerUnitAfterT is the API server's CPU per unit from T on (the whole
// stage where T is when creation began).
func (s *Stage) cpuPerUnitAfterT() float64 {
	if s.AfterT == nil {
		return s.cpuPerUnit()
	}
	return s.AfterT.CPUSeconds / float64(s.N)
}

// writesCell renders the writes per unit, and those after T in brackets
// where the units were created before T.
func (s *Stage) writesCell() string {
	if s.AfterT == nil {
		return fmt.Sprintf("%.2f", s.WritesPerUnit)
	}
	return fmt.Sprintf("%.2f (%.2f)", s.WritesPerUnit, s.WritesPerUnitAfterT)
}

// cpuCell renders the API server's CPU per unit, and that after T in
// brackets where the units were created before T.
func (s *Stage) cpuCell() string {
	if s.APIServerCPUSeconds <= 0 {
		return "—"
	}
	cell := fmt.Sprintf("%.1f ms", 1000*s.cpuPerUnit())
	if s.AfterT != nil {
		cell += fmt.Sprintf(" (%.1f ms)", 1000*s.cpuPerUnitAfterT())
	}
	return cell
}

// spread renders the median of values and their range; the median of an
// even number of values is the mean of the middle two.
func spread(values []float64, format string) string {
	if len(values) == 0 {
		return "—"
	}
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	n := len(sorted)
	median := sorted[n/2]
	if n%2 == 0 {
		median = (sorted[n/2-1] + sorted[n/2]) / 2
	}
	return fmt.Sprintf(format+" ["+format+" – "+format+"]", median, sorted[0], sorted[n-1])
}

// renderStages renders the lateness of each stage side by side, the cnat
// controller's usage, the API requests and the watch's cross-check.
func renderStages(r *Result) string {
	var b strings.Builder
	var rows [][]string
	for _, s := range r.Stages {
		raw := r.stage("raw", s.Round)
		rawP99 := 0.0
		if raw != nil {
			rawP99 = raw.FirstPod.P99
		}
		verdict := fmt.Sprintf("%d / %d", s.Verdict.Duplicates, s.Verdict.Lost)
		if s.Job != nil {
			rows = append(rows, []string{r.label(s, s.Title+": Job"), fmtDistribution(*s.Job), ratio(s.Job.P99, rawP99), "", "", "", ""})
			rows = append(rows, []string{r.label(s, s.Title+": first Pod"), fmtDistribution(s.FirstPod), ratio(s.FirstPod.P99, rawP99), s.terminalCell(raw), s.writesCell(), s.cpuCell(), verdict})
			continue
		}
		label := s.Title
		if s.Name == "cnat" {
			label = "**cnat**"
		}
		rows = append(rows, []string{r.label(s, label), fmtDistribution(s.FirstPod), ratio(s.FirstPod.P99, rawP99), s.terminalCell(raw), s.writesCell(), s.cpuCell(), verdict})
	}
	fmt.Fprintf(&b, "N = %d, all due at one instant T; times from the API server's side (the bench's watch); writes and the API server's CPU over the stage, after T in brackets where the units were created before it:\n\n", r.N)
	b.WriteString(markdownTable([]string{"", "first Pod after T: p50 / p90 / p99 / max", "p99 ÷ raw", "all terminal", "writes per unit", "API server CPU per unit", "duplicates / lost"}, rows))
	if paired := pairedRows(r); len(paired) > 0 && (r.Repeat > 1 || r.stage("floor", 0) != nil || r.stage("job", 0) != nil) {
		fmt.Fprintf(&b, "\nOver the %d runs, each ratio to the stage it is compared with in the same run: median [lowest – highest]:\n\n", max(r.Repeat, 1))
		b.WriteString(markdownTable([]string{"", "p99 first Pod", "all terminal", "API server CPU per unit", "API server CPU per unit after T", "writes per unit"}, paired))
	}

	if cnat := r.stage("cnat", r.Repeat); cnat != nil && cnat.Controller != nil {
		u := cnat.Controller
		b.WriteString("\nThe cnat controller during its stage:\n\n")
		b.WriteString(markdownTable(
			[]string{"creating the Ats", "CPU while admitting them", "CPU from then to all terminal", "peak RSS", "client-side throttling waits logged"},
			[][]string{{fmtSeconds(cnat.CreationSeconds), fmt.Sprintf("%.1f s", u.CPUAdmissionSeconds), fmt.Sprintf("%.1f s", u.CPUFiringSeconds), mib(u.PeakRSSBytes), fmt.Sprint(u.ThrottledRequests)}},
		))
	}

	b.WriteString("\nAPI requests during each stage (apiserver_request_total, from just before creation until all terminal; after T in brackets where the units were created before it), per unit, by response code:\n\n")
	header := []string{"request", "code"}
	for _, s := range r.Stages {
		header = append(header, r.label(s, s.Name))
	}
	b.WriteString(markdownTable(header, requestRows(r.Stages)))
	if rows := eventRows(r.Stages); len(rows) > 0 {
		b.WriteString("\nEvents in each stage's namespace per unit, by the component that emitted them (after T in brackets where the units were created before it):\n\n")
		header[0], header[1] = "component", "reason"
		b.WriteString(markdownTable(header, rows))
	}

	var lags []string
	for _, s := range r.Stages {
		lags = append(lags, fmt.Sprintf("%s %s", r.label(s, s.Name), fmtSeconds(s.WatchLagSeconds)))
	}
	fmt.Fprintf(&b, "\nCross-check of the watch: largest Pod ADD received minus its creationTimestamp (whole seconds, so up to 1 s is truncation): %s.\n", strings.Join(lags, ", "))
	var stored, settled []string
	for _, s := range r.Stages {
		stored = append(stored, fmt.Sprintf("%s %d", r.label(s, s.Name), s.EventsStored))
		cell := fmt.Sprintf("%s %s", r.label(s, s.Name), fmtSeconds(s.EventsSettleSeconds))
		if !s.EventsSettled {
			cell += " (still arriving)"
		}
		settled = append(settled, cell)
	}
	fmt.Fprintf(&b, "\nEvents stored in the cluster as each stage began (each stage removes its own): %s. Waited after all were terminal for the stage's Events to settle, before the last reading: %s.\n", strings.Join(stored, ", "), strings.Join(settled, ", "))
	return b.String()
}

// requestRows lists the requests of each stage per unit, by code, for the
// requests that reached 0.01 per unit in at least one stage (lease renewals
// and the like are noise below that); after T in brackets where a stage has
// its units created before T.
func requestRows(stages []*Stage) [][]string {
	type counts struct{ life, afterT []float64 }
	perUnit := map[RequestKey]*counts{}
	add := func(i int, rows []RequestCount, afterT bool) {
		for _, rc := range rows {
			if rc.Resource == "" { // /metrics, /healthz, ...
				continue
			}
			c := perUnit[rc.RequestKey]
			if c == nil {
				c = &counts{make([]float64, len(stages)), make([]float64, len(stages))}
				perUnit[rc.RequestKey] = c
			}
			if afterT {
				c.afterT[i] = rc.Count / float64(stages[i].N)
			} else {
				c.life[i] = rc.Count / float64(stages[i].N)
			}
		}
	}
	for i, s := range stages {
		add(i, s.Requests, false)
		if s.AfterT != nil {
			add(i, s.AfterT.Requests, true)
		}
	}
	var keys []RequestKey
	for k, c := range perUnit {
		if slices.Max(c.life) >= 0.01 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, compareKeys)
	var rows [][]string
	for _, k := range keys {
		row := []string{"`" + k.String() + "`", k.Code}
		for i, v := range perUnit[k].life {
			cell := perUnitCell(v)
			if stages[i].AfterT != nil && v > 0 {
				cell += " (" + cmp.Or(perUnitCell(perUnit[k].afterT[i]), "0") + ")"
			}
			row = append(row, cell)
		}
		rows = append(rows, row)
	}
	return rows
}

// eventRows lists the Events of each stage per unit by component and
// reason, after T in brackets where a stage has its units created before T.
func eventRows(stages []*Stage) [][]string {
	type key struct{ reporter, reason string }
	var keys []key
	for _, s := range stages {
		for _, e := range s.Events {
			if k := (key{e.Reporter, e.Reason}); !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.reporter, b.reporter), cmp.Compare(a.reason, b.reason))
	})
	var rows [][]string
	for _, k := range keys {
		row := []string{k.reporter, k.reason}
		for _, s := range stages {
			cell := ""
			for _, e := range s.Events {
				if e.Reporter != k.reporter || e.Reason != k.reason {
					continue
				}
				cell = perUnitCell(float64(e.Count) / float64(s.N))
				if s.AfterT != nil {
					cell += " (" + cmp.Or(perUnitCell(float64(e.AfterT)/float64(s.N)), "0") + ")"
				}
			}
			row = append(row, cell)
		}
		rows = append(rows, row)
	}
	return rows
}

// perUnitCell renders a count per unit: empty for none, "<0.01" for a few.
func perUnitCell(v float64) string {
	switch {
	case v == 0:
		return ""
	case v < 0.005:
		return "<0.01"
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// verdictProblems names the duplicates and lost units of every stage.
func verdictProblems(r *Result) []string {
	var out []string
	for _, s := range r.Stages {
		if s.Verdict.Failed() {
			out = append(out, fmt.Sprintf("%s: %d duplicates, %d lost (%s)", s.Name, s.Verdict.Duplicates, s.Verdict.Lost, strings.Join(s.Verdict.Findings, "; ")))
		}
	}
	return out
}

// writeJSON writes the result, samples included, to path.
func writeJSON(path string, r *Result) error {
	content, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(content, '\n'), 0o644)
}

const (
	docBegin = "<!-- bench:begin (written by make bench) -->"
	docEnd   = "<!-- bench:end -->"
)

// renderDocSection is what the bench writes between the markers of
// docs/benchmarks.md: when, how, where, the tables and the picture.
func renderDocSection(r *Result, plotFile, memoryPlotFile string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Latest run: %s, `%s`, at commit `%s`.\n\n", r.Date.UTC().Format("2006-01-02 15:04 MST"), r.Command, r.Machine.Commit)
	fmt.Fprintf(&b, "Machine: %s, %d cores, %d GiB, Linux %s, load average %s when the run began; Kubernetes %s (the local cluster, %d extra simulated nodes); %s.\n\n",
		r.Machine.CPU, r.Machine.Cores, r.Machine.MemoryGiB, r.Machine.Kernel, r.Machine.LoadAverage, r.Machine.Kubernetes, r.Nodes, r.Machine.Go)
	b.WriteString(renderTables(r))
	if plotFile != "" {
		fmt.Fprintf(&b, "\n![First Pod after T, cumulative](%s)\n", plotFile)
	}
	if memoryPlotFile != "" {
		fmt.Fprintf(&b, "\n![Controller RSS against pending Ats](%s)\n", memoryPlotFile)
	}
	return b.String()
}

// replaceSection replaces what lies between the bench's markers in doc.
func replaceSection(doc, section string) (string, error) {
	begin := strings.Index(doc, docBegin)
	end := strings.Index(doc, docEnd)
	if begin < 0 || end < begin {
		return "", fmt.Errorf("the markers %q and %q are missing", docBegin, docEnd)
	}
	return doc[:begin+len(docBegin)] + "\n" + section + doc[end:], nil
}

// updateDoc writes the run into the document at path.
func updateDoc(path string, r *Result, plotFile, memoryPlotFile string) error {
	content, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	updated, err := replaceSection(string(content), renderDocSection(r, plotFile, memoryPlotFile))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if bytes.Equal([]byte(updated), content) {
		return nil
	}
	return os.WriteFile(path, []byte(updated), 0o644)
}
