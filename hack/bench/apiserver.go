package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/hack/internal/cluster"
	"github.com/programming-kubernetes/cnat/internal/controller/atstatus"
	"github.com/programming-kubernetes/cnat/internal/lifecycle"
)

// CostStep is what the API server spent on one step of -apiserver-cost.
type CostStep struct {
	Round, N            int
	Step                string
	Seconds, CPUSeconds float64
	// Life is the life (lifeAt, lifeJob) whose total the step is part of.
	Life string `json:",omitempty"`
}

// stepAtCreate is the step every other step of its run is compared with.
const stepAtCreate = "At create"

// apiserverCost (-apiserver-cost) measures what the API server alone spends
// on the writes an At costs, on envtest's API server and etcd (bin/: no
// scheduler, kubelets, webhooks or controllers, so nothing else shares its
// CPU or writes beside the bench): N plain Pods created (the raw stage's) and
// N Pods rendered by atpod.NewPod (the shaped stage's), then 2N Ats created,
// and the first status the controller writes on a new At (lifecycle.Decide
// on it, no Pods) written on N of them as the controller writes it
// (atstatus.Status: server-side apply under its status field manager) and on
// the other N as a JSON merge patch of the same status. Each step runs at
// -concurrency; its cost is the growth of the API server's own
// process_cpu_seconds_total over it. It answers two questions the cluster's
// stages cannot isolate: what cnat's heavier Pod costs, and what the At's
// first status write costs beside its create. With -apiserver-profiles, a
// CPU profile of each step says where it goes.
func apiserverCost(ctx context.Context, opts options, root string) ([]CostStep, error) {
	env := &envtest.Environment{
		CRDInstallOptions: envtest.CRDInstallOptions{
			Paths:              []string{filepath.Join(root, "kustomize", "base", "crd", "bases")},
			ErrorIfPathMissing: true,
		},
		BinaryAssetsDirectory: filepath.Join(root, "bin"),
	}
	if opts.apiserverAudit {
		// The local cluster's audit policy and backend, as kwokctl sets them
		// (a log file; blocking, the log backend's default): what the audit
		// costs.
		dir, err := os.MkdirTemp("", "cnat-bench-audit-")
		if err != nil {
			return nil, err
		}
		defer func() { _ = os.RemoveAll(dir) }()
		env.ControlPlane.GetAPIServer().Configure().
			Set("audit-policy-file", filepath.Join(root, "hack", "kwok", "audit-policy.yaml")).
			Set("audit-log-path", filepath.Join(dir, "audit.log")).
			Set("audit-log-mode", "blocking")
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting envtest (binaries from bin/; run make tools): %w", err)
	}
	defer func() { _ = env.Stop() }()
	c, err := cluster.ConnectConfig(cfg, "cnat-bench", cluster.Limits{QPS: -1})
	if err != nil {
		return nil, err
	}
	if opts.apiserverPolicy {
		if err := installPodClaims(ctx, c.Client, root); err != nil {
			return nil, err
		}
	}
	b := &bench{c: c, opts: opts}
	n := opts.n
	var steps []CostStep
	for round := 1; round <= opts.repeat; round++ {
		ns := fmt.Sprintf("%s-cost-%d", opts.namespacePrefix, round)
		if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return steps, err
		}
		measureLife := func(step, life string, count int, do func(ctx context.Context, i int) error) error {
			fmt.Printf("bench: -apiserver-cost, run %d of %d: %s\n", round, opts.repeat, step)
			before, err := apiserverCPU(ctx, c)
			if err != nil {
				return err
			}
			profiled := make(chan error, 1)
			go func() { profiled <- profileAPIServer(ctx, c, opts.apiserverProfiles, round, step) }()
			start := time.Now()
			if err := cluster.ForEach(ctx, count, opts.concurrency, do); err != nil {
				return fmt.Errorf("%s: %w", step, err)
			}
			took := time.Since(start)
			after, err := apiserverCPU(ctx, c)
			steps = append(steps, CostStep{Round: round, Step: step, N: count, Seconds: took.Seconds(), CPUSeconds: after - before, Life: life})
			return errors.Join(err, <-profiled)
		}
		measure := func(step string, count int, do func(ctx context.Context, i int) error) error {
			return measureLife(step, "", count, do)
		}
		createPod := func(ctx context.Context, pod *corev1.Pod) error {
			_, err := c.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
			return err
		}
		if err := measure("plain Pod create", n, func(ctx context.Context, i int) error {
			return createPod(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("plain-%06d", i)}, Spec: simulatedPodSpec()})
		}); err != nil {
			return steps, err
		}
		// What each kubelet writes constantly: a status patch of a Pod that
		// is not cnat's.
		if err := measure("plain Pod status patch", n, func(ctx context.Context, i int) error {
			patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":"False","reason":"Bench%d"}]}}`, round)
			_, err := c.Kube.CoreV1().Pods(ns).Patch(ctx, fmt.Sprintf("plain-%06d", i), types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
			return err
		}); err != nil {
			return steps, err
		}
		shapedPod, err := b.shapedPods(ctx, ns, "shaped")
		if err != nil {
			return steps, err
		}
		if err := measure("cnat's Pod create (atpod.NewPod)", n, func(ctx context.Context, i int) error {
			return createPod(ctx, shapedPod(i, time.Now()))
		}); err != nil {
			return steps, err
		}
		// Each At as the API server returned it from its create: what the
		// controller's watch would bring.
		ats := make([]*cnatv1beta1.At, 2*n)
		due := time.Now().Add(24 * time.Hour)
		if err := measure(stepAtCreate, 2*n, func(ctx context.Context, i int) error {
			ats[i] = benchAt(fmt.Sprintf("at-%06d", i), due)
			ats[i].Namespace = ns
			return c.Client.Create(ctx, ats[i])
		}); err != nil {
			return steps, err
		}
		firstStatus := func(at *cnatv1beta1.At) *cnatv1beta1.AtStatus {
			return lifecycle.Decide(at, nil, time.Now()).Status
		}
		if err := measure("first status, server-side apply (atstatus.Status)", n, func(ctx context.Context, i int) error {
			at := ats[i]
			written, err := atstatus.Status(ctx, c.Client, at, firstStatus(at))
			if err == nil && !written {
				err = fmt.Errorf("the first status of At %s was not written", at.Name)
			}
			return err
		}); err != nil {
			return steps, err
		}
		if err := measure("first status, JSON merge patch", n, func(ctx context.Context, i int) error {
			at := ats[n+i]
			patch := client.MergeFrom(at.DeepCopy())
			at.Status = *firstStatus(at)
			return c.Client.Status().Patch(ctx, at, patch, client.FieldOwner(atstatus.StatusFieldManager))
		}); err != nil {
			return steps, err
		}
		if err := lifeCost(ctx, c, ns, n, measureLife); err != nil {
			return steps, err
		}
	}
	return steps, nil
}

// profileAPIServer saves, if dir is set, a CPU profile of the API server
// (its /debug/pprof/profile) over the first 5 s of a step as
// dir/run<round>-<step>.pprof; a step that ends sooner has idle time in it.
// The API server's CPU over the step (apiserverCPU) includes the profiler's.
func profileAPIServer(ctx context.Context, c *cluster.Clients, dir string, round int, step string) error {
	if dir == "" {
		return nil
	}
	raw, err := c.Kube.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", "5").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("profiling the API server during %s: %w", step, err)
	}
	name := strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return unicode.ToLower(r)
		}
		return '-'
	}, step)
	return os.WriteFile(filepath.Join(dir, fmt.Sprintf("run%d-%s.pprof", round, name)), raw, 0o644)
}

// apiserverCPU reads the API server's process_cpu_seconds_total: the CPU
// time (user and system) its process has used.
func apiserverCPU(ctx context.Context, c *cluster.Clients) (float64, error) {
	raw, err := readMetrics(ctx, c.Kube)
	if err != nil {
		return 0, err
	}
	return parseCPU(raw)
}

// parseCPU finds process_cpu_seconds_total in a Prometheus text exposition.
func parseCPU(exposition []byte) (float64, error) {
	f, err := metricFamily(exposition, "process_cpu_seconds_total")
	if err != nil {
		return 0, err
	}
	if len(f.GetMetric()) == 0 {
		return 0, fmt.Errorf("the API server's /metrics has no process_cpu_seconds_total")
	}
	return f.GetMetric()[0].GetCounter().GetValue(), nil
}

// renderCost is the table of -apiserver-cost: per step and run, the API
// server's CPU per object and the objects created or written per second,
// and each step's CPU per object as a ratio to the At create's of the run;
// then, per run, the CPU of an At's and a Job's whole life, the sums of
// their steps' CPU per object.
func renderCost(steps []CostStep) string {
	var out strings.Builder
	out.WriteString(renderCostSteps(steps))
	type lives struct{ at, job float64 }
	perRound := map[int]*lives{}
	var rounds []int
	for _, s := range steps {
		if s.Life == "" {
			continue
		}
		l := perRound[s.Round]
		if l == nil {
			l = &lives{}
			perRound[s.Round] = l
			rounds = append(rounds, s.Round)
		}
		if s.Life == lifeAt {
			l.at += s.CPUSeconds / float64(s.N)
		} else {
			l.job += s.CPUSeconds / float64(s.N)
		}
	}
	if len(rounds) == 0 {
		return out.String()
	}
	out.WriteString("\nThe API server's CPU over a whole life, the sum of its steps per object:\n\n| run | an At's life | a Job's life | At ÷ Job |\n| --- | --- | --- | --- |\n")
	var ratios []float64
	for _, round := range rounds {
		l := perRound[round]
		fmt.Fprintf(&out, "| %d | %.2f ms | %.2f ms | %s |\n", round, 1000*l.at, 1000*l.job, orDash("%.2f×", l.at/l.job))
		if l.at > 0 && l.job > 0 {
			ratios = append(ratios, l.at/l.job)
		}
	}
	if len(rounds) > 1 {
		fmt.Fprintf(&out, "| median [range] |  |  | %s |\n", spread(ratios, "%.2f×"))
	}
	return out.String()
}

// renderCostSteps is the table of every step of -apiserver-cost.
func renderCostSteps(steps []CostStep) string {
	var out strings.Builder
	out.WriteString("| run | step | objects | API server CPU per object | ÷ At create | objects per second |\n| --- | --- | --- | --- | --- | --- |\n")
	perObject := func(s CostStep) float64 { return s.CPUSeconds / float64(s.N) }
	atCreate := map[int]float64{}
	for _, s := range steps {
		if s.Step == stepAtCreate {
			atCreate[s.Round] = perObject(s)
		}
	}
	for _, s := range steps {
		ratio := "–"
		if base, ok := atCreate[s.Round]; ok {
			ratio = fmt.Sprintf("%.2f×", perObject(s)/base)
		}
		fmt.Fprintf(&out, "| %d | %s | %d | %.2f ms | %s | %.0f |\n", s.Round, s.Step, s.N, 1000*perObject(s), ratio, float64(s.N)/s.Seconds)
	}
	return out.String()
}
