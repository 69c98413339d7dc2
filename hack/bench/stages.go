package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/hack/internal/cluster"
	"github.com/programming-kubernetes/cnat/hack/internal/judge"
	"github.com/programming-kubernetes/cnat/hack/internal/launch"
	"github.com/programming-kubernetes/cnat/internal/atpod"
)

// Stage is the measurement of one way of starting N Pods at one instant T.
type Stage struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	N     int    `json:"n"`
	// Round is which of the run's repetitions (-repeat) it belongs to,
	// from 1; its ratios are to the raw stage of the same round.
	Round int `json:"round"`
	// T is the instant the Pods were due (raw: the instant creation began).
	T time.Time `json:"t"`
	// CreationSeconds is how long the bench took to create the N objects
	// (Ats, CronJobs, or the raw Pods themselves).
	CreationSeconds float64 `json:"creationSeconds"`
	// FirstPod is, per unit, when the watch saw its first Pod, minus T.
	FirstPod        Distribution `json:"firstPod"`
	FirstPodSamples []float64    `json:"firstPodSeconds"`
	// Job is, per CronJob, when the watch saw its Job, minus T.
	Job        *Distribution `json:"job,omitempty"`
	JobSamples []float64     `json:"jobSeconds,omitempty"`
	// AllTerminalSeconds is T until the last unit was seen finished (or
	// until the bench gave up, AllTerminal false).
	AllTerminalSeconds float64 `json:"allTerminalSeconds"`
	AllTerminal        bool    `json:"allTerminal"`
	// Requests are the API server's requests from just before creation
	// until all were terminal, by verb, resource and code.
	Requests []RequestCount `json:"requests"`
	// APIServerCPUSeconds is the CPU time the API server's process used
	// over the same span (its process_cpu_seconds_total).
	APIServerCPUSeconds float64 `json:"apiserverCPUSeconds"`
	// AfterT is the API server's requests and CPU from T until all were
	// terminal, for the stages whose units are created before T (cnat,
	// floor, job, cronjob); for the others, T is when creation began.
	AfterT *Window `json:"afterT,omitempty"`
	// WritesPerUnit are the writes of the way of starting Pods under test
	// per unit, its Events included (the bench's own creates excluded);
	// WritesPerUnitAfterT those from T on.
	WritesPerUnit       float64 `json:"writesPerUnit"`
	WritesPerUnitAfterT float64 `json:"writesPerUnitAfterT"`
	// Events are the Events of the stage's namespace, by component and
	// reason.
	Events []EventCount `json:"events,omitempty"`
	// EventsStored is how many Events the API server held, in all
	// namespaces, when the stage began: the same in every pair if nothing
	// drifts.
	EventsStored int `json:"eventsStored"`
	// EventsSettleSeconds is how long after all were terminal the bench
	// waited for the namespace's Events to stop changing before its last
	// reading; EventsSettled is false if they still changed then.
	EventsSettleSeconds float64       `json:"eventsSettleSeconds"`
	EventsSettled       bool          `json:"eventsSettled"`
	Verdict             judge.Verdict `json:"verdict"`
	// WatchLagSeconds is the cross-check of the watch: the largest
	// received-minus-creationTimestamp of a Pod (includes up to 1 s of
	// timestamp truncation).
	WatchLagSeconds float64 `json:"watchLagSeconds"`
	// Controller is the cnat controller's usage (cnat stage only).
	Controller *ControllerUsage `json:"controller,omitempty"`
}

// ControllerUsage is what the cnat controller process used during a stage.
type ControllerUsage struct {
	// CPUAdmissionSeconds is the CPU time spent while the Ats were being
	// created (mostly their admission webhooks), CPUFiringSeconds from then
	// until all were terminal.
	CPUAdmissionSeconds float64 `json:"cpuAdmissionSeconds"`
	CPUFiringSeconds    float64 `json:"cpuFiringSeconds"`
	PeakRSSBytes        int64   `json:"peakRSSBytes"`
	// ThrottledRequests counts the client-side throttling waits client-go
	// logged.
	ThrottledRequests int `json:"throttledRequests"`
}

// bench holds what every stage needs.
type bench struct {
	c          *cluster.Clients
	opts       options
	controller *launch.Process
	root       string
}

// isPodWrite matches writes to Pods themselves (not their binding or
// status, which the scheduler and the simulated kubelet write).
func isPodWrite(k RequestKey) bool {
	return k.write() && k.Group == "" && k.Resource == "pods" && k.Subresource == ""
}

// isCnatWrite matches what cnat's controller writes: Ats (their status,
// their metadata) and Pods.
func isCnatWrite(k RequestKey) bool {
	return isPodWrite(k) || k.write() && k.Group == cnatv1beta1.GroupVersion.Group && k.Resource == "ats"
}

// isBatchWrite matches what kube-controller-manager's CronJob and Job
// controllers write: CronJobs, Jobs (their status too) and Pods.
func isBatchWrite(k RequestKey) bool {
	return isPodWrite(k) || k.write() && k.Group == "batch" && (k.Resource == "cronjobs" || k.Resource == "jobs")
}

// startMeter counts the Events stored as a stage begins and starts reading
// the API server.
func (b *bench) startMeter(ctx context.Context, s *Stage) (*meter, error) {
	stored, err := storedEvents(ctx, b.c.Kube)
	if err != nil {
		return nil, err
	}
	s.EventsStored = stored
	return startMeter(ctx, b.c.Kube)
}

// finishMeter waits for the stage's Events to settle, counts them and
// fills in what the API server did over the stage: the units' whole life,
// their Events included, even where those come after the last unit was
// seen terminal.
func (b *bench) finishMeter(ctx context.Context, m *meter, s *Stage, namespace string, w controllerWrites) error {
	waited, settled, err := settleEvents(ctx, b.c.Kube, namespace)
	if err != nil {
		return err
	}
	s.EventsSettleSeconds, s.EventsSettled = waited.Seconds(), settled
	if !settled {
		fmt.Printf("bench: stage %s: Events still arriving %s after all were terminal; counted as they stand\n", s.Name, settleTimeout)
	}
	events, err := countEvents(ctx, b.c.Kube, namespace, s.T)
	if err != nil {
		return err
	}
	return m.finish(ctx, s, w, events)
}

// runRaw creates N Pods from concurrency goroutines as fast as the API
// server takes them: the limit every controller is measured against. With
// shaped, each Pod is the Pod cnat's controller would create for a bench
// At (atpod.NewPod: an owner reference with blockOwnerDeletion, the tracking
// finalizer, labels, annotations, the restricted security context) instead
// of a bare one: what the heavier Pod alone costs the API server, without
// the controller. Its at label is renamed, so that the controller's Pod
// cache does not select it, and its owner is one At of the stage, due in a
// year, so that the garbage collector keeps it.
func (b *bench) runRaw(ctx context.Context, shaped bool) (*Stage, error) {
	name, title := "raw", fmt.Sprintf("raw Pod creates, unthrottled client, concurrency %d (the limit)", b.opts.concurrency)
	if shaped {
		name, title = "shaped", fmt.Sprintf("raw creates of Pods shaped as cnat's, concurrency %d", b.opts.concurrency)
	}
	ns := b.opts.namespacePrefix + "-" + name
	if err := createNamespace(ctx, b.c, ns); err != nil {
		return nil, err
	}
	newPod := func(i int, _ time.Time) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%05d", name, i)}, Spec: simulatedPodSpec()}
	}
	if shaped {
		var err error
		if newPod, err = b.shapedPods(ctx, ns, name); err != nil {
			return nil, err
		}
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	rec, err := watchNamespace(watchCtx, b.c.Kube, b.c.Dynamic, ns, kindPod)
	if err != nil {
		return nil, err
	}
	stage := &Stage{Name: name, Title: title, N: b.opts.n}
	m, err := b.startMeter(ctx, stage)
	if err != nil {
		return nil, err
	}
	stage.T = time.Now()
	err = cluster.ForEach(ctx, b.opts.n, b.opts.concurrency, func(ctx context.Context, i int) error {
		pod := newPod(i, stage.T)
		if _, err := b.c.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating Pod %s/%s: %w", ns, pod.Name, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	stage.CreationSeconds = time.Since(stage.T).Seconds()
	stage.AllTerminal = rec.waitTerminal(ctx, kindPod, b.opts.n, stage.T.Add(b.opts.timeout))
	if err := b.finishMeter(ctx, m, stage, ns, controllerWrites{match: isPodWrite}); err != nil {
		return nil, err
	}
	if shaped {
		// Nothing releases them: the bench does, once measured.
		if err := stripPodFinalizers(ctx, b.c.Kube, ns); err != nil {
			return nil, err
		}
	}

	pods := rec.snapshot(kindPod)
	var lateness []time.Duration
	byName := map[string]sighting{}
	for _, s := range pods {
		lateness = append(lateness, s.received.Sub(stage.T))
		byName[s.name] = s
		stage.AllTerminalSeconds = max(stage.AllTerminalSeconds, s.terminal.Sub(stage.T).Seconds())
	}
	outcomes := make([]judge.Outcome, b.opts.n)
	for i := range outcomes {
		name := fmt.Sprintf("%s-%05d", name, i)
		s, seen := byName[name]
		outcomes[i] = judge.Outcome{Name: name, Allowed: 1, Terminal: seen && !s.terminal.IsZero()}
		if seen {
			outcomes[i].Runs = 1
		}
	}
	stage.finish(lateness, outcomes, watchLag(pods))
	return stage, nil
}

// shapedPods creates, in ns, the one At that owns the Pods of the shaped
// stage (due in a year, so that the garbage collector keeps them) and
// returns the builder of those Pods: the Pod cnat's controller would create
// for it (atpod.NewPod), named <prefix>-<i>, with its at label renamed so
// that the controller's Pod cache does not select it.
func (b *bench) shapedPods(ctx context.Context, ns, prefix string) (func(i int, t time.Time) *corev1.Pod, error) {
	uids, err := b.createAts(ctx, ns, "owner", 1, time.Now().Add(365*24*time.Hour))
	if err != nil {
		return nil, err
	}
	owner := benchAt("owner-000000", time.Now())
	owner.Namespace, owner.UID, owner.Generation = ns, uids["owner-000000"], 1
	return func(i int, t time.Time) *corev1.Pod {
		pod := atpod.NewPod(owner, 1, t, atpod.PodOptions{})
		pod.Name = fmt.Sprintf("%s-%05d", prefix, i)
		pod.Labels[shapedAtLabel] = pod.Labels[cnatv1beta1.LabelAt]
		delete(pod.Labels, cnatv1beta1.LabelAt)
		return pod
	}, nil
}

// shapedAtLabel stands for cnat's at label on the shaped stage's Pods: as
// long, but not selected by the controller's Pod cache.
const shapedAtLabel = "cnat.programming-kubernetes.info/xx"

// finish fills in the lateness distribution and the verdict.
func (s *Stage) finish(firstPod []time.Duration, outcomes []judge.Outcome, lag time.Duration) {
	s.FirstPod = summarize(firstPod)
	s.FirstPodSamples = seconds(firstPod)
	s.Verdict = judge.Count(outcomes)
	s.WatchLagSeconds = lag.Seconds()
	if !s.AllTerminal {
		s.AllTerminalSeconds = 0
	}
}

// benchAt is the At every cnat unit is: due at t, run on a simulated node.
func benchAt(name string, t time.Time) *cnatv1beta1.At {
	spec := simulatedPodSpec()
	spec.Containers[0].Command = nil
	return &cnatv1beta1.At{
		TypeMeta:   metav1.TypeMeta{APIVersion: cnatv1beta1.GroupVersion.String(), Kind: "At"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: cnatv1beta1.AtSpec{
			Schedule: t.UTC().Format(time.RFC3339),
			Command:  "true",
			Template: &corev1.PodTemplateSpec{Spec: spec},
		},
	}
}

// createAts creates count Ats named <prefix>-<i> due at t, concurrently,
// and returns their UIDs by name.
func (b *bench) createAts(ctx context.Context, ns, prefix string, count int, t time.Time) (map[string]types.UID, error) {
	uids := make(map[string]types.UID, count)
	var mu sync.Mutex
	err := cluster.ForEach(ctx, count, b.opts.concurrency, func(ctx context.Context, i int) error {
		at := benchAt(fmt.Sprintf("%s-%06d", prefix, i), t)
		at.Namespace = ns
		if err := b.c.Client.Create(ctx, at); err != nil {
			return fmt.Errorf("creating At %s/%s: %w", ns, at.Name, err)
		}
		mu.Lock()
		defer mu.Unlock()
		uids[at.Name] = at.UID
		return nil
	})
	return uids, err
}

// runCnat creates N Ats due at one instant a little ahead and watches the
// controller start them.
func (b *bench) runCnat(ctx context.Context) (*Stage, error) {
	ns, rec, _, stopWatch, err := b.watchedNamespace(ctx, "at", kindPod, kindAt)
	if err != nil {
		return nil, err
	}
	defer stopWatch()
	stage := &Stage{Name: "cnat", Title: "cnat", N: b.opts.n}
	m, err := b.startMeter(ctx, stage)
	if err != nil {
		return nil, err
	}
	throttledBefore := countThrottling(b.controller.Log)
	cpu0, err := b.controller.CPUSeconds()
	if err != nil {
		return nil, err
	}
	peakRSS := b.controller.SampleRSS()
	defer peakRSS()

	lead := b.opts.leadFor(b.opts.n)
	stage.T = time.Now().Add(lead).Truncate(time.Second).Add(time.Second)
	start := time.Now()
	fmt.Printf("bench: cnat: creating %d Ats due at %s (%s ahead)\n", b.opts.n, stage.T.Format(time.TimeOnly), time.Until(stage.T).Round(time.Second))
	uids, err := b.createAts(ctx, ns, "bench", b.opts.n, stage.T)
	if err != nil {
		return nil, err
	}
	stage.CreationSeconds = time.Since(start).Seconds()
	if time.Now().After(stage.T) {
		return nil, fmt.Errorf("creating %d Ats took %.1fs, longer than the lead of %s: raise -lead", b.opts.n, stage.CreationSeconds, lead)
	}
	cpu1, err := b.controller.CPUSeconds()
	if err != nil {
		return nil, err
	}
	if err := m.readAtT(ctx, stage.T); err != nil {
		return nil, err
	}
	stage.AllTerminal = rec.waitTerminal(ctx, kindAt, b.opts.n, stage.T.Add(b.opts.timeout))
	cpu2, err := b.controller.CPUSeconds()
	if err != nil {
		return nil, err
	}
	// The controller's writes: Pods, the Ats' status (and metadata, for
	// finalizers) and its Events; the bench's own N creates are not its.
	if err := b.finishMeter(ctx, m, stage, ns, controllerWrites{match: isCnatWrite, benchBeforeT: float64(b.opts.n), reporters: []string{cnatv1beta1.FieldManager}}); err != nil {
		return nil, err
	}
	stage.Controller = &ControllerUsage{
		CPUAdmissionSeconds: cpu1 - cpu0,
		CPUFiringSeconds:    cpu2 - cpu1,
		PeakRSSBytes:        peakRSS(),
		ThrottledRequests:   countThrottling(b.controller.Log) - throttledBefore,
	}

	finishAtStage(stage, rec, uids)
	return stage, nil
}

// countThrottling counts client-go's "client-side throttling" waits in the
// controller's log.
func countThrottling(log string) int {
	content, err := os.ReadFile(log)
	if err != nil {
		return 0
	}
	return strings.Count(string(content), "client-side throttling")
}

// runCronJob creates N CronJobs due in the same minute and watches
// kube-controller-manager's CronJob and Job controllers start them.
func (b *bench) runCronJob(ctx context.Context) (*Stage, error) {
	ns, rec, _, stopWatch, err := b.watchedNamespace(ctx, "cronjob", kindPod, kindJob)
	if err != nil {
		return nil, err
	}
	defer stopWatch()
	stage := &Stage{Name: "cronjob", Title: "CronJob controller (kube-controller-manager, 5 CronJob workers)", N: b.opts.n}
	// The next minute with room to create them all first.
	stage.T = time.Now().Add(b.opts.cronLeadFor(b.opts.n)).Truncate(time.Minute).Add(time.Minute)
	fmt.Printf("bench: cronjob: creating %d CronJobs due at %s (%s ahead)\n", b.opts.n, stage.T.Format(time.TimeOnly), time.Until(stage.T).Round(time.Second))
	m, err := b.startMeter(ctx, stage)
	if err != nil {
		return nil, err
	}
	t := stage.T.UTC()
	schedule := fmt.Sprintf("%d %d %d %d *", t.Minute(), t.Hour(), t.Day(), int(t.Month()))
	uids := make([]types.UID, b.opts.n)
	start := time.Now()
	err = cluster.ForEach(ctx, b.opts.n, b.opts.concurrency, func(ctx context.Context, i int) error {
		cj := &batchv1.CronJob{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%06d", i)},
			Spec: batchv1.CronJobSpec{
				Schedule: schedule,
				TimeZone: ptr.To("Etc/UTC"),
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
					BackoffLimit: ptr.To[int32](0),
					Template:     corev1.PodTemplateSpec{Spec: simulatedPodSpec()},
				}},
			},
		}
		created, err := b.c.Kube.BatchV1().CronJobs(ns).Create(ctx, cj, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating CronJob %s/%s: %w", ns, cj.Name, err)
		}
		uids[i] = created.UID
		return nil
	})
	if err != nil {
		return nil, err
	}
	stage.CreationSeconds = time.Since(start).Seconds()
	if time.Now().After(stage.T) {
		return nil, fmt.Errorf("creating %d CronJobs took %.1fs, past the minute they were due", b.opts.n, stage.CreationSeconds)
	}
	fmt.Printf("bench: cronjob: created in %.1fs; waiting for the Jobs (at most until T+%s)\n", stage.CreationSeconds, b.opts.cronTimeout)
	if err := m.readAtT(ctx, stage.T); err != nil {
		return nil, err
	}
	stage.AllTerminal = rec.waitTerminal(ctx, kindJob, b.opts.n, stage.T.Add(b.opts.cronTimeout))
	err = b.finishMeter(ctx, m, stage, ns, controllerWrites{match: isBatchWrite, benchBeforeT: float64(b.opts.n), reporters: []string{"cronjob-controller", "job-controller"}})
	if err != nil {
		return nil, err
	}

	jobs := rec.snapshot(kindJob)
	pods := rec.snapshot(kindPod)
	firstPod, podCount := firstByOwner(pods)
	jobsOf := map[types.UID][]types.UID{}
	for jobUID, job := range jobs {
		jobsOf[job.owner] = append(jobsOf[job.owner], jobUID)
	}
	var jobLateness, podLateness []time.Duration
	outcomes := make([]judge.Outcome, len(uids))
	for i, uid := range uids {
		o := judge.Outcome{Name: fmt.Sprintf("bench-%06d", i), Allowed: 1, Runs: len(jobsOf[uid])}
		var first types.UID
		for _, jobUID := range jobsOf[uid] {
			job := jobs[jobUID]
			o.Terminal = o.Terminal || !job.terminal.IsZero()
			o.Runs += max(0, podCount[jobUID]-1) // a Job of backoffLimit 0 runs one Pod
			stage.AllTerminalSeconds = max(stage.AllTerminalSeconds, job.terminal.Sub(stage.T).Seconds())
			if first == "" || job.received.Before(jobs[first].received) {
				first = jobUID
			}
		}
		outcomes[i] = o
		if first == "" {
			continue
		}
		jobLateness = append(jobLateness, jobs[first].received.Sub(stage.T))
		if p, ok := firstPod[first]; ok {
			podLateness = append(podLateness, p.received.Sub(stage.T))
		}
	}
	jd := summarize(jobLateness)
	stage.Job = &jd
	stage.JobSamples = seconds(jobLateness)
	stage.finish(podLateness, outcomes, watchLag(pods))
	return stage, nil
}
