package main

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"

	"github.com/programming-kubernetes/cnat/hack/internal/cluster"
	"github.com/programming-kubernetes/cnat/hack/internal/judge"
	"github.com/programming-kubernetes/cnat/hack/internal/poll"
	"github.com/programming-kubernetes/cnat/hack/internal/trial"
)

// run is one scenario's state: its trial (namespace, the At incarnations
// it created, their samples) and its attacks.
type run struct {
	*trial.Trial
	h    *harness
	name string
	// began is just before its namespace was created: audit files
	// rotated before it hold nothing of the run.
	began time.Time

	mu sync.Mutex
	// kills are when the scenario SIGKILLed a controller.
	kills []time.Time
	// breaches say what got through that the API server should have
	// refused (spoof, cotenant); each fails the run.
	breaches []string
	// wrongs say what a scenario checked beyond the judge and found
	// broken (cotenant: an At re-run after a forced deletion, a revoked
	// author's Pod created); each fails the run.
	wrongs []string
}

// runScenario runs s in a namespace of its own and judges it: its verdict,
// and whether it failed otherwise: an attack the API server should have
// refused got through (a breach), or it SIGKILLed the controller but never
// between a Pod create and the At status write after it
// (judge.KillsInWindow), so it did not test what its kills are for.
func (h *harness) runScenario(ctx context.Context, s scenario) (v judge.Verdict, failed bool, err error) {
	name := s.name
	h.scenario = name
	began := time.Now()
	ns := fmt.Sprintf("chaos-%s-%s", name, began.UTC().Format("150405"))
	t, err := trial.Start(ctx, h.cl.Client, ns)
	if err != nil {
		return v, false, err
	}
	fmt.Printf("chaos %s: namespace %s\n", name, ns)
	r := &run{Trial: t, h: h, name: name, began: began}
	start := time.Now()
	replicas := h.replicas[:1]
	if s.leader {
		replicas = h.replicas
	}
	for _, rep := range replicas {
		if err = rep.start(ctx, s.leader); err != nil {
			break
		}
	}
	if err == nil {
		err = s.body(h, ctx, r)
	}
	var terminating []string
	if err == nil {
		// While the controller still runs: it is what releases them.
		terminating, err = r.terminating(ctx)
	}
	h.stopReplicas()
	if err != nil {
		return v, false, err
	}
	v, rec, _, err := r.Judge(ctx, h.cfg.auditLog, r.began)
	if err != nil {
		return v, false, err
	}
	inWindow := judge.KillsInWindow(r.kills, rec)
	missedWindow := len(r.kills) > 0 && inWindow == 0
	for _, b := range r.breaches {
		v.Findings = append(v.Findings, "breach: "+b)
	}
	for _, w := range r.wrongs {
		v.Findings = append(v.Findings, "wrong: "+w)
	}
	for _, p := range terminating {
		v.Findings = append(v.Findings, "terminating: "+p)
	}
	if err := trial.WriteFindings(filepath.Join(h.cfg.workDir, name+".findings"), v.Findings, 20); err != nil {
		return v, false, err
	}
	fmt.Printf("chaos %s: took %s\n", name, time.Since(start).Round(time.Second))
	fmt.Println(v.Line(name))
	fmt.Printf("chaos %s: terminating=%d breaches=%d wrong=%d\n", name, len(terminating), len(r.breaches), len(r.wrongs))
	if len(r.breaches) > 0 {
		fmt.Printf("chaos %s: %d attacks got through that the API server should have refused\n", name, len(r.breaches))
	}
	if len(terminating) > 0 {
		fmt.Printf("chaos %s: %d Pods left Terminating, held by cnat's tracking finalizer %s after the scenario\n", name, len(terminating), terminatingWait)
	}
	if len(r.kills) > 0 {
		fmt.Printf("chaos %s: %d of %d SIGKILLs landed between a Pod create and the status write of its At that followed\n", name, inWindow, len(r.kills))
	}
	if missedWindow {
		fmt.Printf("chaos %s: no SIGKILL landed in that window: the run did not test a crash there\n", name)
	}
	return v, len(r.breaches) > 0 || len(r.wrongs) > 0 || len(terminating) > 0 || missedWindow, nil
}

// terminatingWait is how long the Pods of a finished scenario may keep a
// deletion timestamp and cnat's tracking finalizer.
const terminatingWait = 30 * time.Second

// terminating waits, at most terminatingWait, until no Pod of the
// namespace has a deletion timestamp and cnat's tracking finalizer, and
// describes those that still do: a Pod the controller will never release
// stays Terminating, and its namespace with it.
func (r *run) terminating(ctx context.Context) ([]string, error) {
	var left []string
	// Listed with ctx: a list cut short by the wait's timeout is no answer.
	err := poll.Until(ctx, time.Second, terminatingWait, func(context.Context) (bool, error) {
		var pods corev1.PodList
		if err := r.h.cl.Client.List(ctx, &pods, client.InNamespace(r.Namespace)); err != nil {
			return false, nil // asked again
		}
		left = nil
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil && slices.Contains(p.Finalizers, cnatv1beta1.TrackingFinalizer) {
				left = append(left, fmt.Sprintf("Pod %s/%s (uid %s), deleted at %s, phase %s",
					p.Namespace, p.Name, p.UID, p.DeletionTimestamp.UTC().Format(time.RFC3339), p.Status.Phase))
			}
		}
		return len(left) == 0, nil
	}, nil)
	return left, err
}

// kill SIGKILLs rep and records when.
func (r *run) kill(rep *replica) error {
	r.mu.Lock()
	r.kills = append(r.kills, time.Now())
	r.mu.Unlock()
	return rep.Kill()
}

// wrong records a check of the scenario's that failed.
func (r *run) wrong(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wrongs = append(r.wrongs, fmt.Sprintf(format, args...))
}

// breach records an attack that got through.
func (r *run) breach(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.breaches = append(r.breaches, fmt.Sprintf(format, args...))
}

// create creates an At of the scenario (labelled with its name) and
// records the incarnation; a refusal is returned and recorded.
func (r *run) create(ctx context.Context, name string, s trial.AtSpec) error {
	return r.createAs(ctx, r.h.cl.Client, name, s)
}

// createAs is create as the user of the client c: the At's author.
func (r *run) createAs(ctx context.Context, c client.Client, name string, s trial.AtSpec) error {
	labels := map[string]string{"chaos.cnat.programming-kubernetes.info/scenario": r.name}
	maps.Copy(labels, s.Labels)
	s.Labels = labels
	return r.CreateAtAs(ctx, c, name, "v1beta1", s)
}

// createMany creates n Ats named <prefix>-<i> with 8 workers; spec gives
// each its spec.
func (r *run) createMany(ctx context.Context, prefix string, n int, spec func(i int) trial.AtSpec) error {
	return cluster.ForEach(ctx, n, 8, func(ctx context.Context, i int) error {
		return r.create(ctx, fmt.Sprintf("%s-%d", prefix, i), spec(i))
	})
}

// fireTime is a moment far enough ahead for n Ats to be created before it,
// on a whole second (a schedule has seconds): 50 ms an At, what admission
// takes on a loaded 2-core machine (each At passes the webhooks and a
// dry-run Pod create; at 20 ms an At, 200 Ats were once not all created in
// time for the spoof scenario, which then rightly proved nothing).
func fireTime(n int) time.Time {
	return time.Now().Add(3*time.Second + time.Duration(n)*50*time.Millisecond).Truncate(time.Second).Add(time.Second)
}

// settle waits until every At in the namespace is terminal, for at most the
// size's settle time; what is still not terminal then is judged lost.
func (r *run) settle(ctx context.Context) error {
	pending, err := r.Settle(ctx, r.h.size.settle)
	if pending > 0 {
		fmt.Printf("chaos %s: %d Ats not terminal %s after the last attack\n", r.name, pending, r.h.size.settle)
	}
	return err
}
