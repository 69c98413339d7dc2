package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatac "github.com/programming-kubernetes/cnat/api/applyconfiguration/api/v1beta1"
	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/hack/internal/judge"
	"github.com/programming-kubernetes/cnat/internal/atpod"
	"github.com/programming-kubernetes/cnat/internal/controller/atstatus"
	"github.com/programming-kubernetes/cnat/internal/lifecycle"
)

// floorLead is how much longer ahead than the cnat stage's the floor's Ats
// are due: after creating them, the bench waits for the controller's Pending
// status on each and stops the controller before T.
const floorLead = 15 * time.Second

// runFloor measures the least that any controller keeping cnat's contract
// must write, written by the bench's own client at the cnat stage's
// concurrency: N Ats due at T are created ahead through cnat's webhooks
// (the controller writes their Pending status), the controller is stopped
// before T, and from T the bench, with -concurrency workers fed by its own
// Pod watch, does for each At only what the contract needs: create its Pod
// as cnat renders it (atpod.NewPod: the owner reference and the tracking
// finalizer), write the At's status once the Pod exists (Running) and once
// it has finished (the outcome), each as lifecycle.Decide says and applied
// as the controller applies it (applyStatus), and release the Pod's
// finalizer as the controller does. No Events, no confirming read, no
// retries. The controller is started again once all are terminal.
func (b *bench) runFloor(ctx context.Context) (*Stage, error) {
	ns, rec, watchCtx, stopWatch, err := b.watchedNamespace(ctx, "floor", kindPod, kindAt)
	if err != nil {
		return nil, err
	}
	defer stopWatch()
	stage := &Stage{Name: "floor", Title: fmt.Sprintf("floor: the contract's writes alone, the bench's client, concurrency %d", b.opts.concurrency), N: b.opts.n}
	m, err := b.startMeter(ctx, stage)
	if err != nil {
		return nil, err
	}
	lead := b.opts.leadFor(b.opts.n) + floorLead
	stage.T = time.Now().Add(lead).Truncate(time.Second).Add(time.Second)
	fmt.Printf("bench: floor: creating %d Ats due at %s (%s ahead)\n", b.opts.n, stage.T.Format(time.TimeOnly), time.Until(stage.T).Round(time.Second))
	start := time.Now()
	uids, err := b.createAts(ctx, ns, "floor", b.opts.n, stage.T)
	if err != nil {
		return nil, err
	}
	stage.CreationSeconds = time.Since(start).Seconds()
	if err := waitPending(ctx, rec, b.opts.n, stage.T.Add(-5*time.Second)); err != nil {
		return nil, err
	}
	b.controller.Stop()
	defer func() {
		if err := b.restartController(context.WithoutCancel(ctx), ""); err != nil {
			fmt.Println("bench: floor: starting the controller again:", err)
		}
	}()
	var list cnatv1beta1.AtList
	if err := b.c.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing the floor's Ats: %w", err)
	}
	if time.Now().After(stage.T) {
		return nil, fmt.Errorf("creating %d Ats and stopping the controller took until %s, past T: raise -lead", b.opts.n, time.Now().Format(time.TimeOnly))
	}
	f, err := b.startFloorClient(watchCtx, ns, list.Items, stage.T)
	if err != nil {
		return nil, err
	}
	if err := m.readAtT(ctx, stage.T); err != nil {
		return nil, err
	}
	f.fire()
	stage.AllTerminal = rec.waitTerminal(ctx, kindAt, b.opts.n, stage.T.Add(b.opts.timeout))
	// The releases that follow the last outcomes belong to the stage, as
	// the controller's do to the cnat stage.
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return f.released.Load() >= int64(b.opts.n), nil
	})
	f.stop()
	if err := b.finishMeter(ctx, m, stage, ns, controllerWrites{match: isCnatWrite, benchBeforeT: float64(b.opts.n)}); err != nil {
		return nil, err
	}
	if n := f.errors.Load(); n > 0 {
		fmt.Printf("bench: floor: %d writes failed and were retried (%s)\n", n, f.lastError.Load())
	}
	finishAtStage(stage, rec, uids)
	return stage, nil
}

// waitPending waits until the watch has seen a phase on n Ats: the
// controller has written their first status.
func waitPending(ctx context.Context, rec *recorder, n int, deadline time.Time) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Until(deadline), true, func(context.Context) (bool, error) {
		pending := 0
		for _, s := range rec.snapshot(kindAt) {
			if s.phase != "" {
				pending++
			}
		}
		return pending >= n, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the controller to write the Pending status of %d Ats before T: %w (raise -lead)", n, err)
	}
	return nil
}

// finishAtStage fills in the lateness and the verdict of a stage whose
// units are the Ats of uids, as the bench's watch saw them and their Pods.
func finishAtStage(stage *Stage, rec *recorder, uids map[string]types.UID) {
	ats := rec.snapshot(kindAt)
	pods := rec.snapshot(kindPod)
	first, count := firstByOwner(pods)
	var lateness []time.Duration
	outcomes := make([]judge.Outcome, 0, len(uids))
	for name, uid := range uids {
		at := ats[uid]
		outcomes = append(outcomes, judge.Outcome{Name: name, Runs: count[uid], Allowed: int(at.attempts), Terminal: !at.terminal.IsZero()})
		if f, ok := first[uid]; ok {
			lateness = append(lateness, f.received.Sub(stage.T))
		}
		stage.AllTerminalSeconds = max(stage.AllTerminalSeconds, at.terminal.Sub(stage.T).Seconds())
	}
	stage.finish(lateness, outcomes, watchLag(pods))
}

// floorClient is the floor stage's controller: a work queue of At names,
// fed at T with every At and then by its own Pod watch.
type floorClient struct {
	b      *bench
	ns     string
	t      time.Time
	units  map[string]*floorUnit
	pods   listerscorev1.PodLister
	queue  workqueue.TypedRateLimitingInterface[string]
	cancel context.CancelFunc
	done   chan struct{}
	// released counts the Pods released.
	released atomic.Int64
	// errors counts failed writes (retried); lastError is the last one.
	errors    atomic.Int64
	lastError atomic.Value
}

// floorUnit is one At as the floor client knows it. The queue hands a name
// to one worker at a time, so no lock is needed.
type floorUnit struct {
	at                *cnatv1beta1.At
	created, released bool
}

// startFloorClient starts the Pod watch (synced before it returns) and the
// workers; nothing happens until fire.
func (b *bench) startFloorClient(ctx context.Context, ns string, ats []cnatv1beta1.At, t time.Time) (*floorClient, error) {
	ctx, cancel := context.WithCancel(ctx)
	f := &floorClient{
		b: b, ns: ns, t: t, units: make(map[string]*floorUnit, len(ats)),
		queue:  workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		cancel: cancel, done: make(chan struct{}),
	}
	for i := range ats {
		f.units[ats[i].Name] = &floorUnit{at: &ats[i]}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(b.c.Kube, 0, informers.WithNamespace(ns))
	podInformer := factory.Core().V1().Pods()
	enqueue := func(obj any) {
		if pod, ok := obj.(*corev1.Pod); ok && pod.Labels[cnatv1beta1.LabelAt] != "" {
			f.queue.Add(pod.Labels[cnatv1beta1.LabelAt])
		}
	}
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		cancel()
		return nil, err
	}
	f.pods = podInformer.Lister()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), podInformer.Informer().HasSynced) {
		cancel()
		return nil, fmt.Errorf("the floor's Pod watch did not sync")
	}
	workers := b.opts.concurrency
	finished := make(chan struct{}, workers)
	for range workers {
		go func() {
			defer func() { finished <- struct{}{} }()
			for f.next(ctx) {
			}
		}()
	}
	go func() {
		for range workers {
			<-finished
		}
		close(f.done)
	}()
	return f, nil
}

// fire hands every At to the workers: all are due now.
func (f *floorClient) fire() {
	for name := range f.units {
		f.queue.Add(name)
	}
}

// stop ends the workers and the watch.
func (f *floorClient) stop() {
	f.queue.ShutDown()
	f.cancel()
	<-f.done
}

// next handles one At from the queue; false once the queue is shut down.
func (f *floorClient) next(ctx context.Context) bool {
	name, shutdown := f.queue.Get()
	if shutdown {
		return false
	}
	defer f.queue.Done(name)
	if err := f.sync(ctx, name); err != nil {
		if f.errors.Add(1) == 1 {
			fmt.Printf("bench: floor: %v; retrying\n", err)
		}
		f.lastError.Store(err.Error())
		f.queue.AddRateLimited(name)
		return true
	}
	f.queue.Forget(name)
	return true
}

// sync does the one thing an At needs now: create its Pod if it has none,
// write its status if its phase changed (Running, then the outcome), and
// release its Pod once the outcome is written.
func (f *floorClient) sync(ctx context.Context, name string) error {
	u := f.units[name]
	if u == nil {
		return nil
	}
	pod, err := f.pods.Pods(f.ns).Get(atpod.PodName(u.at, 1))
	if apierrors.IsNotFound(err) {
		if u.created {
			return nil // its watch event is on its way
		}
		_, err := f.b.c.Kube.CoreV1().Pods(f.ns).Create(ctx, atpod.NewPod(u.at, 1, f.t, atpod.PodOptions{}), metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the Pod of At %s: %w", name, err)
		}
		u.created = true
		return nil
	}
	if err != nil {
		return err
	}
	u.created = true
	d := lifecycle.Decide(u.at, []corev1.Pod{*pod}, time.Now())
	if d.Status != nil && d.Status.Phase != u.at.Status.Phase {
		if err := applyStatus(ctx, f.b.c.Client, u.at, d.Status); err != nil {
			return fmt.Errorf("writing the status of At %s: %w", name, err)
		}
		u.at.Status = *d.Status
	}
	if u.released || !u.at.Status.Phase.Finished() || !slices.Contains(pod.Finalizers, cnatv1beta1.TrackingFinalizer) {
		return nil
	}
	// The controller's release: the finalizer off, the released label on.
	patch := fmt.Sprintf(`{"metadata":{"uid":%q,"labels":{%q:"true"},"$deleteFromPrimitiveList/finalizers":[%q]}}`,
		pod.UID, cnatv1beta1.LabelReleased, cnatv1beta1.TrackingFinalizer)
	_, err = f.b.c.Kube.CoreV1().Pods(f.ns).Patch(ctx, pod.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: cnatv1beta1.FieldManager})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("releasing the Pod of At %s: %w", name, err)
	}
	u.released = true
	f.released.Add(1)
	return nil
}

// applyStatus applies status as the At's whole status, as the controller
// does (atstatus.Status: server-side apply under its status field manager,
// forced), but without its resourceVersion precondition: the floor client
// is the At's only writer once the controller is stopped, and it reads no
// At back to learn the version its last write made.
func applyStatus(ctx context.Context, c client.Client, at *cnatv1beta1.At, status *cnatv1beta1.AtStatus) error {
	raw, err := json.Marshal(status)
	if err != nil {
		return err
	}
	statusAC := cnatac.AtStatus()
	if err := json.Unmarshal(raw, statusAC); err != nil {
		return err
	}
	return c.Status().Apply(ctx, cnatac.At(at.Name, at.Namespace).WithStatus(statusAC), client.FieldOwner(atstatus.StatusFieldManager), client.ForceOwnership)
}
