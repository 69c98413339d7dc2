// Command upgrade judges an upgrade of cnat on the local cluster: with a
// release installed (hack/e2e-release.sh upgrade installs the previous one),
// it creates Ats that stand at every point of their lives when the upgrade
// begins — running (a Pod that runs through the upgrade), retrying (failed
// attempts, more to come) and pending (due after the upgrade) — half of
// them through v1alpha1 and half through v1beta1, then runs the upgrade
// command while a client keeps creating Ats (in both versions) and reading
// them (a list in v1alpha1, which converts every At, and a get in v1beta1),
// and records every request the API server refused: a webhook or a
// conversion that cannot be reached fails it.
//
// When every At is terminal it judges from the API server's side, with the
// chaos harness's judge (hack/internal/judge: the audit log's Pod creates and
// status writes, and the objects at the end): no duplicate run, no At lost
// (one that is gone counts as lost: an upgrade deletes none), none silent,
// none falsely Succeeded; and no request refused, every At readable in
// both versions with the same content, the CRD storing v1beta1 only, and
// the controller running the image the upgrade installs. It prints one line
//
//	upgrade: ats=N pods=P duplicates=D lost=L silent=S falseSucceeded=F refused=R unreadable=U
//
// after the findings, and exits 1 if any count is above 0 or the run did not
// put an At in each state across the upgrade (then it tested nothing).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	cnatv1alpha1 "github.com/programming-kubernetes/cnat/api/v1alpha1"
	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/hack/internal/cluster"
	"github.com/programming-kubernetes/cnat/hack/internal/judge"
	"github.com/programming-kubernetes/cnat/hack/internal/poll"
	"github.com/programming-kubernetes/cnat/hack/internal/trial"
)

// crdName is cnat's CustomResourceDefinition.
const crdName = "ats.cnat.programming-kubernetes.info"

type config struct {
	kubeconfig, auditLog, upgrade, image, workDir string
	perState                                      int
	pendingAfter, upgradeTimeout, settle          time.Duration
}

func main() {
	var cfg config
	flag.StringVar(&cfg.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "The cluster.")
	flag.StringVar(&cfg.auditLog, "audit-log", ".local/kwok/clusters/cnat/logs/audit.log", "The kube-apiserver audit log.")
	flag.StringVar(&cfg.upgrade, "upgrade", "", "The upgrade: a bash command line, run once the Ats stand where the run needs them.")
	flag.StringVar(&cfg.image, "image", "", "The controller image the upgrade installs (name@sha256:...): every controller Pod must run it afterwards.")
	flag.StringVar(&cfg.workDir, "work-dir", ".local/upgrade", "Where the findings are written.")
	flag.IntVar(&cfg.perState, "ats", 4, "Ats per state (running, retrying, pending) and API version.")
	flag.DurationVar(&cfg.pendingAfter, "pending-after", 150*time.Second, "How long after their creation the pending Ats are due: after the upgrade has ended.")
	flag.DurationVar(&cfg.upgradeTimeout, "upgrade-timeout", 5*time.Minute, "How long the upgrade command may take.")
	flag.DurationVar(&cfg.settle, "settle", 6*time.Minute, "How long after the upgrade the Ats may take to end.")
	flag.Parse()
	if cfg.upgrade == "" || cfg.image == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: upgrade -upgrade 'COMMAND' -image NAME@sha256:... [flags]")
		os.Exit(2)
	}
	ctrllog.SetLogger(logr.Discard())
	ok, err := run(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "upgrade:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

// harness holds a run's state: its trial (namespace, Ats created,
// samples) and the requests of the client that keeps using Ats.
type harness struct {
	*trial.Trial
	cfg config
	c   client.Client

	// mu guards what the client's goroutine records: its requests and
	// those refused.
	mu       sync.Mutex
	requests int
	refused  []string
	// upgradeBegan is when the upgrade command started.
	upgradeBegan time.Time
}

func run(cfg config) (bool, error) {
	cl, err := cluster.Connect(cfg.kubeconfig, "cnat-upgrade", cluster.Limits{QPS: 50, Burst: 100})
	if err != nil {
		return false, err
	}
	if err := os.MkdirAll(cfg.workDir, 0o755); err != nil {
		return false, err
	}
	ctx := context.Background()
	began := time.Now()
	t, err := trial.Start(ctx, cl.Client, "upgrade-"+began.UTC().Format("150405"))
	if err != nil {
		return false, err
	}
	h := &harness{Trial: t, cfg: cfg, c: cl.Client}
	fmt.Printf("upgrade: namespace %s\n", h.Namespace)

	// The Ats of each state, half in each version: running and retrying
	// fire at once, pending after the upgrade.
	now := time.Now()
	soon := now.Add(3 * time.Second).Truncate(time.Second)
	later := now.Add(cfg.pendingAfter).Truncate(time.Second)
	for i := range cfg.perState {
		for _, version := range []string{"v1beta1", "v1alpha1"} {
			for _, s := range []struct {
				name string
				spec trial.AtSpec
			}{
				{"running", trial.AtSpec{At: soon, Command: "true", Duration: "240s", ExitCode: 0}},
				{"retrying", trial.AtSpec{At: soon, Command: "true", Duration: "2s", ExitCode: 1, BackoffLimit: 3}},
				{"pending", trial.AtSpec{At: later, Command: "true", Duration: "2s", ExitCode: 0, BackoffLimit: 1}},
			} {
				if err := h.CreateAt(ctx, fmt.Sprintf("%s-%s-%d", s.name, version, i), version, s.spec); err != nil {
					return false, err
				}
			}
		}
	}
	stopSampling := h.Sample(ctx, time.Second)
	if err := h.waitInPlace(ctx); err != nil {
		stopSampling()
		return false, err
	}
	atStart := h.states(ctx)
	fmt.Printf("upgrade: before the upgrade: %v\n", atStart)

	// A client that keeps writing and reading Ats while the upgrade runs,
	// and for 15 s after it.
	clientCtx, stopClient := context.WithCancel(ctx)
	clientDone := make(chan struct{})
	go func() { defer close(clientDone); h.keepUsing(clientCtx) }()

	h.upgradeBegan = time.Now()
	fmt.Printf("upgrade: running: %s\n", cfg.upgrade)
	upgradeErr := h.runUpgrade(ctx)
	took := time.Since(h.upgradeBegan)
	fmt.Printf("upgrade: the upgrade took %s (%v)\n", took.Round(100*time.Millisecond), errOrOK(upgradeErr))
	atEnd := h.states(ctx)
	fmt.Printf("upgrade: after the upgrade: %v\n", atEnd)
	time.Sleep(15 * time.Second)
	stopClient()
	<-clientDone

	h.settle(ctx)
	stopSampling()

	v, rec, err := h.judge(ctx)
	if err != nil {
		return false, err
	}
	unreadable := h.readBothVersions(ctx, &v)
	var problems []string
	if upgradeErr != nil {
		problems = append(problems, fmt.Sprintf("the upgrade command failed: %v", upgradeErr))
	}
	problems = append(problems, h.checkImage(ctx)...)
	problems = append(problems, h.checkStoredVersions(ctx)...)
	problems = append(problems, h.checkScenario(atStart, atEnd, rec)...)

	h.mu.Lock()
	refused, requests := h.refused, h.requests
	h.mu.Unlock()
	for _, r := range refused {
		v.Findings = append(v.Findings, "refused: "+r)
	}
	for _, p := range problems {
		v.Findings = append(v.Findings, "run: "+p)
	}
	if err := trial.WriteFindings(filepath.Join(cfg.workDir, h.Namespace+".findings"), v.Findings, 30); err != nil {
		return false, err
	}
	fmt.Printf("upgrade: %d requests during the upgrade, %d refused\n", requests, len(refused))
	fmt.Printf("upgrade: ats=%d pods=%d duplicates=%d lost=%d silent=%d falseSucceeded=%d refused=%d unreadable=%d\n",
		v.Ats, v.Pods, v.Duplicates, v.Lost, v.Silent, v.FalseSucceeded, len(refused), unreadable)
	return !v.Failed() && len(refused) == 0 && unreadable == 0 && len(problems) == 0, nil
}

func errOrOK(err error) string {
	if err != nil {
		return err.Error()
	}
	return "exit 0"
}

// waitInPlace waits, for at most two minutes, until every running At has a
// Pod that runs and every retrying At has failed once and waits for its
// next attempt.
func (h *harness) waitInPlace(ctx context.Context) error {
	missing := 0
	inPlace := func(ctx context.Context) (bool, error) {
		var ats cnatv1beta1.AtList
		if err := h.c.List(ctx, &ats, client.InNamespace(h.Namespace)); err != nil {
			return false, err
		}
		missing = 0
		for _, at := range ats.Items {
			switch {
			case strings.HasPrefix(at.Name, "running-"):
				if at.Status.Phase != cnatv1beta1.PhaseRunning || at.Status.Reason != "Running" {
					missing++
				}
			case strings.HasPrefix(at.Name, "retrying-"):
				if at.Status.Phase != cnatv1beta1.PhaseRunning || at.Status.Attempts < 1 || at.Status.Reason != "Retrying" {
					missing++
				}
			}
		}
		return missing == 0, nil
	}
	return poll.Until(ctx, time.Second, 2*time.Minute, inPlace, func() error {
		return fmt.Errorf("%d running or retrying Ats not in place after two minutes: the installed release does not run Ats", missing)
	})
}

// states counts the run's Ats by name prefix and phase/reason.
func (h *harness) states(ctx context.Context) map[string]int {
	counts := map[string]int{}
	var ats cnatv1beta1.AtList
	if err := h.c.List(ctx, &ats, client.InNamespace(h.Namespace)); err != nil {
		counts["list failed: "+err.Error()]++
		return counts
	}
	for _, at := range ats.Items {
		kind, _, _ := strings.Cut(at.Name, "-")
		counts[fmt.Sprintf("%s %s/%s", kind, at.Status.Phase, at.Status.Reason)]++
	}
	return counts
}

// keepUsing creates an At every 250 ms, alternating the API versions, each
// due 20 s later, and lists all Ats through v1alpha1 and gets one through
// v1beta1 in between, until ctx ends; every error is a refusal.
func (h *harness) keepUsing(ctx context.Context) {
	for i := 0; ctx.Err() == nil; i++ {
		version := []string{"v1beta1", "v1alpha1"}[i%2]
		name := fmt.Sprintf("during-%s-%d", version, i)
		spec := trial.AtSpec{At: time.Now().Add(20 * time.Second).Truncate(time.Second), Command: "true", Duration: "2s"}
		h.request(name+" create", h.CreateAt(ctx, name, version, spec))
		var alphas cnatv1alpha1.AtList
		h.request("list v1alpha1", h.c.List(ctx, &alphas, client.InNamespace(h.Namespace)))
		h.request("get v1beta1 running-v1alpha1-0", h.c.Get(ctx, client.ObjectKey{Namespace: h.Namespace, Name: "running-v1alpha1-0"}, &cnatv1beta1.At{}))
		_ = poll.Sleep(ctx, 250*time.Millisecond)
	}
}

// request counts a request of the client and records it if it was refused.
func (h *harness) request(what string, err error) {
	if err != nil && strings.Contains(err.Error(), "context canceled") {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.requests++
	if err != nil {
		h.refused = append(h.refused, fmt.Sprintf("%s at %s: %v", what, time.Now().UTC().Format("15:04:05.000"), err))
	}
}

// runUpgrade runs the upgrade command with bash, its output shown, for at
// most the upgrade timeout.
func (h *harness) runUpgrade(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.upgradeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", h.cfg.upgrade)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return cmd.Run()
}

// settle waits until every At is terminal, for at most the settle time.
func (h *harness) settle(ctx context.Context) {
	pending, err := h.Settle(ctx, h.cfg.settle)
	switch {
	case err != nil:
		fmt.Printf("upgrade: the Ats cannot be listed after the upgrade: %v\n", err)
	case pending > 0:
		fmt.Printf("upgrade: %d Ats not terminal %s after the upgrade\n", pending, h.cfg.settle)
	}
}

// judge judges the run with the chaos judge; an At created and gone is
// lost (the upgrade deletes none, and nothing else does).
func (h *harness) judge(ctx context.Context) (judge.Verdict, judge.Record, error) {
	v, rec, gone, err := h.Judge(ctx, h.cfg.auditLog, h.upgradeBegan.Add(-5*time.Minute))
	for _, name := range gone {
		v.Lost++
		v.Findings = append(v.Findings, fmt.Sprintf("lost: At %s/%s: gone after the upgrade", h.Namespace, name))
	}
	return v, rec, err
}

// readBothVersions reads every At of the run through both API versions and
// counts those that cannot be read, or whose v1alpha1 form does not convert
// back to what v1beta1 shows.
func (h *harness) readBothVersions(ctx context.Context, v *judge.Verdict) int {
	var betas cnatv1beta1.AtList
	if err := h.c.List(ctx, &betas, client.InNamespace(h.Namespace)); err != nil {
		v.Findings = append(v.Findings, fmt.Sprintf("unreadable: listing v1beta1: %v", err))
		return 1
	}
	unreadable := 0
	for i := range betas.Items {
		beta := &betas.Items[i]
		alpha := &cnatv1alpha1.At{}
		if err := h.c.Get(ctx, client.ObjectKeyFromObject(beta), alpha); err != nil {
			unreadable++
			v.Findings = append(v.Findings, fmt.Sprintf("unreadable: At %s/%s through v1alpha1: %v", h.Namespace, beta.Name, err))
			continue
		}
		back := &cnatv1beta1.At{}
		if err := alpha.ConvertTo(back); err != nil {
			unreadable++
			v.Findings = append(v.Findings, fmt.Sprintf("unreadable: At %s/%s: v1alpha1 form does not convert: %v", h.Namespace, beta.Name, err))
			continue
		}
		if alpha.ResourceVersion != beta.ResourceVersion {
			continue // written in between: compare what is the same write only
		}
		if !equality.Semantic.DeepEqual(back.Spec, beta.Spec) || !equality.Semantic.DeepEqual(back.Status, beta.Status) {
			unreadable++
			v.Findings = append(v.Findings, fmt.Sprintf("unreadable: At %s/%s reads differently through v1alpha1 and v1beta1", h.Namespace, beta.Name))
		}
	}
	return unreadable
}

// checkImage checks that every controller Pod is ready and runs the image
// the upgrade installs.
func (h *harness) checkImage(ctx context.Context) []string {
	var deploy appsv1.Deployment
	if err := h.c.Get(ctx, client.ObjectKey{Namespace: "cnat-system", Name: "cnat-controller"}, &deploy); err != nil {
		return []string{fmt.Sprintf("the controller Deployment: %v", err)}
	}
	var problems []string
	if got := deploy.Spec.Template.Spec.Containers[0].Image; got != h.cfg.image {
		problems = append(problems, fmt.Sprintf("the controller Deployment runs %s, not %s", got, h.cfg.image))
	}
	var pods corev1.PodList
	if err := h.c.List(ctx, &pods, client.InNamespace("cnat-system"), client.MatchingLabels{"app.kubernetes.io/component": "controller"}); err != nil {
		return append(problems, fmt.Sprintf("the controller Pods: %v", err))
	}
	ready := 0
	for _, pod := range pods.Items {
		if pod.DeletionTimestamp != nil {
			continue
		}
		if pod.Spec.Containers[0].Image != h.cfg.image {
			problems = append(problems, fmt.Sprintf("controller Pod %s runs %s", pod.Name, pod.Spec.Containers[0].Image))
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	if want := ptr.Deref(deploy.Spec.Replicas, 1); int32(ready) != want {
		problems = append(problems, fmt.Sprintf("%d of %d controller Pods ready", ready, want))
	}
	return problems
}

// checkStoredVersions checks that the CRD stores v1beta1 and lists no
// other stored version.
func (h *harness) checkStoredVersions(ctx context.Context) []string {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := h.c.Get(ctx, client.ObjectKey{Name: crdName}, &crd); err != nil {
		return []string{fmt.Sprintf("the CRD: %v", err)}
	}
	if !slices.Equal(crd.Status.StoredVersions, []string{"v1beta1"}) {
		return []string{fmt.Sprintf("the CRD's stored versions are %v, not [v1beta1]", crd.Status.StoredVersions)}
	}
	return nil
}

// checkScenario fails a run that did not test what it claims: Ats running
// and retrying when the upgrade began, pending ones still pending when it
// ended, a retry made after it began, Ats created during it.
func (h *harness) checkScenario(atStart, atEnd map[string]int, rec judge.Record) []string {
	var problems []string
	if n, want := atStart["running Running/Running"], 2*h.cfg.perState; n != want {
		problems = append(problems, fmt.Sprintf("%d of %d running Ats ran when the upgrade began", n, want))
	}
	if n, want := atStart["retrying Running/Retrying"], 2*h.cfg.perState; n != want {
		problems = append(problems, fmt.Sprintf("%d of %d retrying Ats waited for a retry when the upgrade began", n, want))
	}
	if n, want := atEnd["pending Pending/Scheduled"], 2*h.cfg.perState; n != want {
		problems = append(problems, fmt.Sprintf("%d of %d pending Ats were still pending when the upgrade ended: give the upgrade more time (-pending-after)", n, want))
	}
	retries := 0
	for _, c := range rec.Creates {
		if strings.HasPrefix(c.Name, "retrying-") && c.Time.After(h.upgradeBegan) {
			retries++
		}
	}
	if retries == 0 {
		problems = append(problems, "no retry was made after the upgrade began")
	}
	during := 0
	for _, inc := range h.Created() {
		if strings.HasPrefix(inc.Name, "during-") {
			during++
		}
	}
	fmt.Printf("upgrade: %d retries made after the upgrade began, %d Ats created during it\n", retries, during)
	return problems
}
