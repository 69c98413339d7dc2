// Command bench measures how on time cnat starts Pods at scale, side by side
// in one run with the limit (raw Pod creation by an unthrottled client) and
// with the Kubernetes CronJob controller: `make bench`. It runs against the
// local cluster (make cluster) with cnat installed (make install), starts
// the controller on the host as `make run` does, and reports what it saw
// from the API server's side. docs/benchmarks.md explains the numbers.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/programming-kubernetes/cnat/hack/internal/cluster"
)

// options are the bench's flags.
type options struct {
	kubeconfig        string
	n                 int
	concurrency       int
	stages            []string
	lead              time.Duration
	timeout           time.Duration
	cronTimeout       time.Duration
	podsPerNode       int
	namespacePrefix   string
	controllerLog     string
	controllerArgs    stringList
	jsonPath          string
	docPath           string
	plotPath          string
	memorySettled     bool
	memoryPending     int
	memoryUnrelated   int
	memoryBatch       int
	memoryBefore      string
	memoryPlotPath    string
	repeat            int
	apiserverCost     bool
	apiserverProfiles string
	apiserverAudit    bool
	apiserverPolicy   bool
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, " ") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

var knownStages = []string{"raw", "shaped", "cnat", "floor", "job", "cronjob", "admission"}

// outputFlags are left out of the command line the report shows: they say
// where results go, not what was measured.
var outputFlags = []string{"kubeconfig", "controller-log", "json", "doc", "plot", "memory-plot", "apiserver-profiles"}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	stages := fs.String("stages", "raw,cnat,floor,job,cronjob", "Comma-separated stages to run, in order: raw (the limit), shaped (raw creates of Pods shaped as cnat's), cnat, floor (the contract's writes alone, by the bench's client, the controller stopped), job (suspended Jobs unsuspended at T), cronjob, admission (N ConfigMaps, N Pods and N pending Ats created at -concurrency: the rates).")
	fs.StringVar(&o.kubeconfig, "kubeconfig", ".local/kubeconfig", "Kubeconfig of the local cluster, with administrator rights.")
	fs.IntVar(&o.n, "n", 1000, "Units per stage: Ats, raw Pods, Jobs, CronJobs, all due at one instant.")
	fs.IntVar(&o.concurrency, "concurrency", 20, "Concurrent requests of the bench's unthrottled client (raw Pods, creating Ats, Jobs and CronJobs, unsuspending the Jobs) and workers of the floor stage.")
	fs.DurationVar(&o.lead, "lead", 0, "How far ahead the Ats are due, and the Jobs unsuspended, when their creation starts (0: 10s + 25ms per At, 10s + 10ms per Job, so that all exist before T; the floor stage adds 15s to stop the controller).")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "How long after T the raw, shaped, cnat, floor and job stages wait for all to be terminal.")
	fs.DurationVar(&o.cronTimeout, "cronjob-timeout", 6*time.Minute, "How long after T the cronjob stage waits for all Jobs to be terminal.")
	fs.IntVar(&o.podsPerNode, "pods-per-node", 110, "Pod capacity of each simulated node the bench adds; it adds enough for all Pods of a stage to fit at once.")
	fs.StringVar(&o.namespacePrefix, "namespace-prefix", "cnat-bench", "Prefix of the namespaces the stages run in (deleted afterwards).")
	fs.StringVar(&o.controllerLog, "controller-log", ".local/bench-controller.log", "Where the controller's log goes.")
	fs.Var(&o.controllerArgs, "controller-arg", "An extra flag for the controller, such as --concurrency=1 (repeatable), to compare settings in one run.")
	fs.StringVar(&o.jsonPath, "json", ".local/bench.json", "Where to write the full result, samples included (empty: nowhere).")
	fs.StringVar(&o.docPath, "doc", "", "Markdown file whose bench section (between the bench's markers) gets the latest tables (empty: none).")
	fs.StringVar(&o.plotPath, "plot", "", "Where to draw the lateness plot, .svg or .png (empty: none).")
	fs.BoolVar(&o.memorySettled, "memory-settled", false, "After the cnat stage, restart the controller and read its memory with the N settled Ats.")
	fs.IntVar(&o.memoryPending, "memory-pending", 0, "Read the controller's memory, restarted, with this many pending Ats (due in a day) and at the steps of a 1-2-5 series from 1 000 below it: time until it listed every At, peak RSS, RSS; and how late an At due 10 s after the last restart, while it still lists, starts (0: skip).")
	fs.StringVar(&o.memoryBefore, "memory-before-controller", "", "A controller binary (such as one built from an earlier commit) read at each -memory-pending step too, on the same Ats: the before line.")
	fs.StringVar(&o.memoryPlotPath, "memory-plot", "", "Where to draw the RSS of the -memory-pending steps against the number of pending Ats, .svg or .png (empty: none).")
	fs.IntVar(&o.memoryUnrelated, "memory-unrelated-pods", 0, "Read the controller's memory before and after this many Pods that are not cnat's (0: skip).")
	fs.IntVar(&o.memoryBatch, "memory-batch", 1000, "Batch size for -memory-pending.")
	fs.IntVar(&o.repeat, "repeat", 1, "Run the stages this many times, alternating (raw, cnat, raw, cnat, ...), and report each ratio's median and spread over the runs.")
	fs.BoolVar(&o.apiserverCost, "apiserver-cost", false, "Instead of the stages, on envtest's API server and etcd alone (bin/; no cluster needed): the API server's CPU per plain Pod create, per cnat's Pod create, per At create and per first status write of an At (server-side apply as the controller's, and a JSON merge patch), N of each, -repeat times.")
	fs.BoolVar(&o.apiserverPolicy, "apiserver-policy", false, "With -apiserver-cost: cnat's Pod-claim policy (kustomize/base/policy) installed first; run with and without it for what it costs the Pods that are not cnat's (the plain Pod create and status patch steps).")
	fs.BoolVar(&o.apiserverAudit, "apiserver-audit", false, "With -apiserver-cost: the API server audits as the local cluster's does (hack/kwok/audit-policy.yaml: Pod writes at RequestResponse, to a log file in blocking mode); run with and without it for the audit's share.")
	fs.StringVar(&o.apiserverProfiles, "apiserver-profiles", "", "With -apiserver-cost: a directory for a CPU profile of the API server over the first 5 s of each step (empty: none).")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q: every setting is a flag", fs.Args())
	}
	for _, s := range strings.Split(*stages, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !slices.Contains(knownStages, s) {
			return o, fmt.Errorf("-stages: unknown stage %q; accepted: %s", s, strings.Join(knownStages, ", "))
		}
		o.stages = append(o.stages, s)
	}
	for _, check := range []struct {
		name  string
		value int
		min   int
	}{
		{"n", o.n, 1}, {"concurrency", o.concurrency, 1}, {"pods-per-node", o.podsPerNode, 1},
		{"memory-pending", o.memoryPending, 0}, {"memory-unrelated-pods", o.memoryUnrelated, 0}, {"memory-batch", o.memoryBatch, 1},
		{"repeat", o.repeat, 1},
	} {
		if check.value < check.min {
			return o, fmt.Errorf("-%s: %d is too small; accepted: an integer of at least %d", check.name, check.value, check.min)
		}
	}
	if o.lead < 0 || o.timeout <= 0 || o.cronTimeout <= 0 {
		return o, errors.New("-lead, -timeout, -cronjob-timeout: accepted: positive durations (-lead 0 means automatic)")
	}
	return o, nil
}

// command is the command line that reproduces the run, as the report shows it.
func command(args []string) string {
	var kept []string
	skip := false
	for _, a := range args {
		if skip {
			skip = false
			continue
		}
		name := strings.TrimLeft(a, "-")
		name, _, hasValue := strings.Cut(name, "=")
		if slices.Contains(outputFlags, name) {
			skip = !hasValue
			continue
		}
		kept = append(kept, a)
	}
	if len(kept) == 0 {
		return "make bench"
	}
	return fmt.Sprintf("make bench BENCH_FLAGS='%s'", strings.Join(kept, " "))
}

// leadFor is how far ahead n Ats are due: enough to create them all first.
func (o options) leadFor(n int) time.Duration {
	if o.lead > 0 {
		return o.lead
	}
	// Each At passes the validating webhook (a dry-run Pod create and a
	// SubjectAccessReview): about 70 a second were created on the 2-core
	// development machine.
	return 10*time.Second + time.Duration(n)*25*time.Millisecond
}

// cronLeadFor is the least time ahead the CronJobs' minute starts.
func (o options) cronLeadFor(n int) time.Duration {
	return 5*time.Second + time.Duration(n)*5*time.Millisecond
}

func main() {
	opts, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	// The controller's packages the bench calls (apply) log through
	// controller-runtime; the bench prints what it has to say itself.
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, opts, command(os.Args[1:])); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, opts options, cmdline string) (err error) {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	if opts.apiserverCost {
		steps, err := apiserverCost(ctx, opts, root)
		fmt.Printf("\n%s, N = %d, concurrency %d, %s:\n\n%s", cmdline, opts.n, opts.concurrency, time.Now().UTC().Format("2006-01-02 15:04 UTC"), renderCost(steps))
		return err
	}
	// No client-side rate limiter: the bench measures the API server, not a
	// token bucket.
	c, err := cluster.Connect(opts.kubeconfig, "cnat-bench", cluster.Limits{QPS: -1})
	if err != nil {
		return err
	}
	if err := removeLeftovers(ctx, c); err != nil {
		return err
	}
	nodes := int(math.Ceil(float64(max(opts.n, opts.memoryUnrelated)) / float64(opts.podsPerNode)))
	fmt.Printf("bench: simulated nodes for the bench: %d, each with room for %d Pods\n", nodes, opts.podsPerNode)
	if err := ensureNodes(ctx, c.Kube, nodes, opts.podsPerNode); err != nil {
		return err
	}
	// Everything below is removed again, also after a failure, while the
	// controller still runs (it releases what it holds on its Pods).
	cleanup := context.WithoutCancel(ctx)
	defer func() {
		if err := deleteNodes(cleanup, c.Kube); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
		}
	}()

	fmt.Printf("bench: starting the controller (log: %s)\n", opts.controllerLog)
	controller, err := startController(ctx, root, opts.kubeconfig, opts.controllerLog, "", opts.controllerArgs)
	if err != nil {
		return err
	}
	b := &bench{c: c, opts: opts, controller: controller, root: root}
	defer func() { b.controller.Stop() }()
	defer func() {
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: removing what the failed run created")
			_ = removeLeftovers(cleanup, c)
		}
	}()

	var cleanupErrs []error
	result := &Result{Date: time.Now().UTC(), Command: cmdline, N: opts.n, Concurrency: opts.concurrency, Nodes: nodes, Repeat: opts.repeat}
	result.Machine = describeMachine(ctx, c, root)
	if opts.memorySettled || opts.memoryPending > 0 || opts.memoryUnrelated > 0 {
		idle, err := b.readMemory(ctx, "no Ats")
		if err != nil {
			return err
		}
		result.Memory = append(result.Memory, idle)
	}
	for round := 1; round <= opts.repeat; round++ {
		for _, name := range opts.stages {
			fmt.Printf("bench: stage %s, N = %d, run %d of %d\n", name, opts.n, round, opts.repeat)
			if err := b.runStage(ctx, result, name, round); err != nil {
				return fmt.Errorf("stage %s, run %d: %w", name, round, err)
			}
			// A stage's results are kept even if its cleanup fails: the
			// next run removes what is left.
			if err := cleanNamespace(ctx, c, opts.namespacePrefix+"-"+stageNamespace(name)); err != nil {
				cleanupErrs = append(cleanupErrs, err)
				fmt.Fprintln(os.Stderr, "bench:", err)
			}
		}
	}
	for _, memory := range []struct {
		count int
		read  func(context.Context, int) ([]MemoryReading, error)
	}{{opts.memoryPending, b.memoryPending}, {opts.memoryUnrelated, b.memoryUnrelatedPods}} {
		if memory.count == 0 {
			continue
		}
		m, err := memory.read(ctx, memory.count)
		if len(m) == 0 {
			return err
		}
		result.Memory = append(result.Memory, m...)
		if err != nil { // read, but not cleaned up
			cleanupErrs = append(cleanupErrs, err)
		}
	}
	return errors.Join(report(result, opts), errors.Join(cleanupErrs...))
}

// runStage runs the stage name of round and adds what it measured to
// result; after the last round's cnat stage, with -memory-settled, the
// memory of a restarted controller beside its settled Ats.
func (b *bench) runStage(ctx context.Context, result *Result, name string, round int) (err error) {
	var s *Stage
	switch name {
	case "admission":
		readings, err := b.runAdmission(ctx)
		for _, a := range readings {
			a.Round = round
			result.Admission = append(result.Admission, a)
		}
		return err
	case "raw", "shaped":
		s, err = b.runRaw(ctx, name == "shaped")
	case "cnat":
		s, err = b.runCnat(ctx)
	case "floor":
		s, err = b.runFloor(ctx)
	case "job":
		s, err = b.runJob(ctx)
	case "cronjob":
		s, err = b.runCronJob(ctx)
	}
	if err != nil {
		return err
	}
	s.Round = round
	fmt.Printf("bench: stage %s: first Pod p50 %s, p99 %s; all terminal %s; duplicates %d, lost %d\n", name,
		fmtSeconds(s.FirstPod.P50), fmtSeconds(s.FirstPod.P99), s.terminalCell(nil), s.Verdict.Duplicates, s.Verdict.Lost)
	result.Stages = append(result.Stages, s)
	if name != "cnat" || !b.opts.memorySettled || round != b.opts.repeat {
		return nil
	}
	if err := b.restartController(ctx, ""); err != nil {
		return err
	}
	m, err := b.readMemory(ctx, fmt.Sprintf("%d settled Ats", b.opts.n))
	if err != nil {
		return err
	}
	result.Memory = append(result.Memory, m)
	return nil
}

// stageNamespace is the suffix of a stage's namespace.
func stageNamespace(stage string) string {
	if stage == "cnat" {
		return "at"
	}
	return stage
}

// report prints the tables and writes the JSON, the document and the plot.
// Duplicates or lost units fail the run, after everything is written.
func report(result *Result, opts options) error {
	fmt.Println()
	fmt.Print(renderTables(result))
	if opts.jsonPath != "" {
		if err := writeJSON(opts.jsonPath, result); err != nil {
			return fmt.Errorf("writing %s: %w", opts.jsonPath, err)
		}
		fmt.Printf("\nbench: wrote %s\n", opts.jsonPath)
	}
	hasPending := slices.ContainsFunc(result.Memory, func(m MemoryReading) bool { return m.PendingAts > 0 })
	plots := map[string]func(*Result, string) error{}
	if opts.plotPath != "" && len(result.Stages) > 0 {
		plots[opts.plotPath] = plotLateness
	}
	if opts.memoryPlotPath != "" && hasPending {
		plots[opts.memoryPlotPath] = plotMemory
	}
	links := map[string]string{}
	for path, draw := range plots {
		if err := draw(result, path); err != nil {
			return err
		}
		fmt.Printf("bench: drew %s\n", path)
		if opts.docPath != "" {
			rel, err := filepath.Rel(filepath.Dir(opts.docPath), path)
			if err != nil {
				return err
			}
			links[path] = rel
		}
	}
	if opts.docPath != "" {
		if err := updateDoc(opts.docPath, result, links[opts.plotPath], links[opts.memoryPlotPath]); err != nil {
			return err
		}
		fmt.Printf("bench: updated %s\n", opts.docPath)
	}
	if problems := verdictProblems(result); len(problems) > 0 {
		return fmt.Errorf("units duplicated or lost: %s", strings.Join(problems, "; "))
	}
	return nil
}
