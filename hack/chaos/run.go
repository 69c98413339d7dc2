package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/hack/internal/judge"
)

// Annotations the simulated kubelet (hack/kwok/stages.yaml) reads.
const (
	annotationDuration = "cnat.programming-kubernetes.info/simulate-duration"
	annotationExitCode = "cnat.programming-kubernetes.info/simulate-exit-code"
	// annotationStartDelay keeps a Pod Pending on its node that long
	// before its containers start (hack/kwok/stages.yaml).
	annotationStartDelay = "cnat.programming-kubernetes.info/simulate-start-delay"
)

// run is one scenario's state: its namespace and the At incarnations it
// created (the ones the API server admitted).
type run struct {
	h    *harness
	name string
	ns   string
	// began is just before its namespace was created: audit files
	// rotated before it hold nothing of the run.
	began time.Time

	mu      sync.Mutex
	created []judge.Incarnation
	// refused are names of Ats whose create the API server refused.
	refused []string
	// samples are how each At (by UID) stood while the run went on, for
	// the judge's silent count (sample).
	samples map[string][]judge.Sample
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
	if err := h.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return outcome{}, fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	fmt.Printf("chaos %s: namespace %s\n", name, ns)
	// Pods can be created once the controller manager has made the
	// namespace's default ServiceAccount.
	for deadline := time.Now().Add(time.Minute); ; {
		err := h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "default"}, &corev1.ServiceAccount{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return outcome{}, fmt.Errorf("namespace %s has no default ServiceAccount after a minute: %w", ns, err)
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return outcome{}, err
		}
	}
	r := &run{h: h, name: name, ns: ns, began: began, samples: map[string][]judge.Sample{}}
	start := time.Now()
	err := body(ctx, r)
	h.stopReplicas()
	if err != nil {
		return outcome{}, err
	}
	v, rec, err := r.judge(ctx)
	if err != nil {
		return outcome{}, err
	}
	o := outcome{Verdict: v, breaches: len(r.breaches), kills: len(r.kills), killsInWindow: judge.KillsInWindow(r.kills, rec)}
	for _, b := range r.breaches {
		v.Findings = append(v.Findings, "breach: "+b)
	}
	findings := filepath.Join(h.cfg.workDir, name+".findings")
	if err := os.WriteFile(findings, []byte(strings.Join(v.Findings, "\n")+"\n"), 0o644); err != nil {
		return outcome{}, err
	}
	for i, f := range v.Findings {
		if i == 20 {
			fmt.Printf("  ... %d more in %s\n", len(v.Findings)-i, findings)
			break
		}
		fmt.Println("  " + f)
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
		ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: name},
		Spec: cnatv1beta1.AtSpec{
			StartingDeadlineSeconds: deadline,
			Schedule:                s.at.UTC().Format(time.RFC3339),
			Command:                 s.command,
			BackoffLimit:            ptr.To(s.backoffLimit),
			Template: &corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels: labels,
					Annotations: map[string]string{
						annotationDuration:   s.duration,
						annotationExitCode:   fmt.Sprint(s.exitCode),
						annotationStartDelay: s.startDelay,
					},
				},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{simulatedKey: simulatedValue},
					Tolerations: []corev1.Toleration{{
						Key: simulatedKey, Operator: corev1.TolerationOpEqual, Value: simulatedValue,
						Effect: corev1.TaintEffectNoSchedule,
					}},
					Containers: []corev1.Container{container},
				},
			},
		},
	}
}

// create creates an At and records the incarnation; a refusal is returned
// and recorded.
func (r *run) create(ctx context.Context, name string, s atSpec) error {
	at := r.newAt(name, s)
	err := r.h.c.Create(ctx, at)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.refused = append(r.refused, name)
		return fmt.Errorf("creating At %s/%s: %w", r.ns, name, err)
	}
	r.created = append(r.created, judge.Incarnation{
		UID: string(at.UID), Namespace: at.Namespace, Name: at.Name, BackoffLimit: s.backoffLimit,
		Due: s.at.Truncate(time.Second), Deadline: s.deadline > 0, Expect: s.expect,
	})
	return nil
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

// terminal is true for the phases an At ends in.
func terminal(p cnatv1beta1.Phase) bool {
	return p == cnatv1beta1.PhaseSucceeded || p == cnatv1beta1.PhaseFailed || p == cnatv1beta1.PhaseMissed
}

// settle waits until every At in the namespace is terminal, for at most the
// size's settle time; what is still not terminal then is judged lost.
func (r *run) settle(ctx context.Context) error {
	deadline := time.Now().Add(r.h.size.settle)
	for {
		var ats cnatv1beta1.AtList
		if err := r.h.c.List(ctx, &ats, client.InNamespace(r.ns)); err == nil {
			pending := 0
			for _, at := range ats.Items {
				if !terminal(at.Status.Phase) {
					pending++
				}
			}
			if pending == 0 {
				return nil
			}
			if time.Now().After(deadline) {
				fmt.Printf("chaos %s: %d Ats not terminal %s after the last attack\n", r.name, pending, r.h.size.settle)
				return nil
			}
		}
		if err := sleep(ctx, time.Second); err != nil {
			return err
		}
	}
}

// sample records, every interval until the returned stop is called, how each
// At of the namespace stands: its phase and reason, and whether a Pod of its
// own exists. The Ats are listed first, then the Pods, so a Pod the At had
// when it was listed is in the Pod list (it carries the tracking finalizer
// until its run is recorded). The judge counts an At past its time by
// judge.SilentAfter with no Pod and no reason that says why as silent.
func (r *run) sample(ctx context.Context, interval time.Duration) (stop func()) {
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			r.sampleOnce(sctx)
			if sleep(sctx, interval) != nil {
				return
			}
		}
	}()
	return func() { cancel(); <-done }
}

func (r *run) sampleOnce(ctx context.Context) {
	now := time.Now()
	var ats cnatv1beta1.AtList
	if err := r.h.c.List(ctx, &ats, client.InNamespace(r.ns)); err != nil {
		return
	}
	var pods metav1.PartialObjectMetadataList
	pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := r.h.c.List(ctx, &pods, client.InNamespace(r.ns)); err != nil {
		return
	}
	hasPod := map[types.UID]bool{}
	for i := range pods.Items {
		if ref := metav1.GetControllerOfNoCopy(&pods.Items[i]); ref != nil {
			hasPod[ref.UID] = true
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, at := range ats.Items {
		r.samples[string(at.UID)] = append(r.samples[string(at.UID)], judge.Sample{
			Time: now, Phase: string(at.Status.Phase), Reason: at.Status.Reason, HasPod: hasPod[at.UID],
		})
	}
}

// judge reads the audit log and the final objects and judges the run; the
// record is what the audit log showed.
func (r *run) judge(ctx context.Context) (judge.Verdict, judge.Record, error) {
	rec, err := judge.ReadAuditFiles(r.h.cfg.auditLog, r.began, func(ns string) bool { return ns == r.ns })
	if err != nil {
		return judge.Verdict{}, judge.Record{}, err
	}
	var pods corev1.PodList
	if err := r.h.c.List(ctx, &pods, client.InNamespace(r.ns)); err != nil {
		return judge.Verdict{}, judge.Record{}, fmt.Errorf("listing the Pods: %w", err)
	}
	rec.Observe(pods.Items)
	var ats cnatv1beta1.AtList
	// After the uninstall scenario there is no At, and no kind At.
	if err := r.h.c.List(ctx, &ats, client.InNamespace(r.ns)); err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
		return judge.Verdict{}, judge.Record{}, fmt.Errorf("listing the Ats: %w", err)
	}
	r.mu.Lock()
	incarnations, _ := judge.Settle(r.created, r.samples, ats.Items)
	refused := r.refused
	r.mu.Unlock()
	v := judge.Judge(incarnations, rec)

	// Nothing half-applied: an At whose create was refused must not exist,
	// unless a later create of the same name was admitted.
	admitted := map[string]bool{}
	for _, inc := range incarnations {
		admitted[inc.Name] = true
	}
	for _, name := range refused {
		if admitted[name] {
			continue
		}
		err := r.h.c.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: name}, &cnatv1beta1.At{})
		if !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
			v.Lost++
			v.Findings = append(v.Findings, fmt.Sprintf("lost: At %s/%s: its create was refused, yet it exists (%v)", r.ns, name, err))
		}
	}
	return v, rec, nil
}
