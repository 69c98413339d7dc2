package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/hack/internal/cluster"
	"github.com/programming-kubernetes/cnat/hack/internal/judge"
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
	// refused (spoof); each fails the run.
	breaches []string
}

// outcome is a scenario's verdict, the attacks that should have been
// refused but were not, and the controller kills that landed between a Pod
// create and the At status write after it (judge.KillsInWindow).
type outcome struct {
	judge.Verdict
	breaches      int
	kills         int
	killsInWindow int
}

// missedWindow reports whether the scenario killed the controller but
// never between a Pod create and its At's status write: it did not test
// what its kills are for.
func (o outcome) missedWindow() bool {
	return o.kills > 0 && o.killsInWindow == 0
}

// atSpec is what a scenario asks of an At.
type atSpec struct {
	// at is when it fires.
	at time.Time
	// command is the shell line it runs.
	command string
	// duration is how long its Pod runs (simulated), as a Go duration.
	duration string
	// startDelay is how long its Pod stays Pending on its node before it
	// starts (simulated), as a Go duration ("": at once).
	startDelay string
	// exitCode is its Pod's (simulated) exit code.
	exitCode int
	// backoffLimit is its spec.backoffLimit.
	backoffLimit int32
	// labels go on its Pod template.
	labels map[string]string
	// cpu is its container's CPU request ("": none).
	cpu string
	// deadline is its spec.startingDeadlineSeconds (0: none).
	deadline int64
	// expect is the phase the scenario knows it must end in ("": whatever
	// its Pods say).
	expect string
}

func (h *harness) runScenario(ctx context.Context, name string, body func(context.Context, *run) error) (outcome, error) {
	h.scenario = name
	began := time.Now()
	ns := fmt.Sprintf("chaos-%s-%s", name, began.UTC().Format("150405"))
	t, err := trial.Start(ctx, h.c, ns)
	if err != nil {
		return outcome{}, err
	}
	fmt.Printf("chaos %s: namespace %s\n", name, ns)
	r := &run{Trial: t, h: h, name: name, began: began}
	start := time.Now()
	err = body(ctx, r)
	h.stopReplicas()
	if err != nil {
		return outcome{}, err
	}
	v, rec, _, err := r.Judge(ctx, h.cfg.auditLog, r.began)
	if err != nil {
		return outcome{}, err
	}
	o := outcome{Verdict: v, breaches: len(r.breaches), kills: len(r.kills), killsInWindow: judge.KillsInWindow(r.kills, rec)}
	for _, b := range r.breaches {
		v.Findings = append(v.Findings, "breach: "+b)
	}
	if err := trial.WriteFindings(filepath.Join(h.cfg.workDir, name+".findings"), v.Findings, 20); err != nil {
		return outcome{}, err
	}
	fmt.Printf("chaos %s: took %s\n", name, time.Since(start).Round(time.Second))
	fmt.Println(v.Line(name))
	if len(r.breaches) > 0 {
		fmt.Printf("chaos %s: %d attacks got through that the API server should have refused\n", name, len(r.breaches))
	}
	if o.kills > 0 {
		fmt.Printf("chaos %s: %d of %d SIGKILLs landed between a Pod create and the status write of its At that followed\n", name, o.killsInWindow, o.kills)
	}
	if o.missedWindow() {
		fmt.Printf("chaos %s: no SIGKILL landed in that window: the run did not test a crash there\n", name)
	}
	return o, nil
}

// kill SIGKILLs rep and records when.
func (r *run) kill(rep *replica) error {
	r.mu.Lock()
	r.kills = append(r.kills, time.Now())
	r.mu.Unlock()
	return rep.kill()
}

// breach records an attack that got through.
func (r *run) breach(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.breaches = append(r.breaches, fmt.Sprintf(format, args...))
}

// newAt is the At a scenario creates.
func (r *run) newAt(name string, s atSpec) *cnatv1beta1.At {
	labels := map[string]string{"chaos.cnat.programming-kubernetes.info/scenario": r.name}
	for k, v := range s.labels {
		labels[k] = v
	}
	var deadline *int64
	if s.deadline > 0 {
		deadline = ptr.To(s.deadline)
	}
	container := corev1.Container{Name: "command"}
	if s.cpu != "" {
		container.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(s.cpu)}
	}
	return &cnatv1beta1.At{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: name},
		Spec: cnatv1beta1.AtSpec{
			StartingDeadlineSeconds: deadline,
			Schedule:                s.at.UTC().Format(time.RFC3339),
			Command:                 s.command,
			BackoffLimit:            ptr.To(s.backoffLimit),
			Template: &corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels: labels,
					Annotations: map[string]string{
						cluster.AnnotationDuration:   s.duration,
						cluster.AnnotationExitCode:   fmt.Sprint(s.exitCode),
						cluster.AnnotationStartDelay: s.startDelay,
					},
				},
				Spec: cluster.Simulated(corev1.PodSpec{Containers: []corev1.Container{container}}),
			},
		},
	}
}

// create creates an At and records the incarnation; a refusal is returned
// and recorded.
func (r *run) create(ctx context.Context, name string, s atSpec) error {
	return r.Create(ctx, r.newAt(name, s), judge.Incarnation{
		BackoffLimit: s.backoffLimit, Due: s.at.Truncate(time.Second), Deadline: s.deadline > 0, Expect: s.expect,
	})
}

// createMany creates n Ats named <prefix>-<i> with 8 workers; spec gives
// each its spec.
func (r *run) createMany(ctx context.Context, prefix string, n int, spec func(i int) atSpec) error {
	var (
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
	)
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				if err := r.create(ctx, fmt.Sprintf("%s-%d", prefix, i), spec(i)); err != nil {
					errMu.Lock()
					if first == nil {
						first = err
					}
					errMu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
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
