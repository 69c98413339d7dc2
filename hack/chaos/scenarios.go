package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/hack/internal/cluster"
	"github.com/programming-kubernetes/cnat/hack/internal/poll"
	"github.com/programming-kubernetes/cnat/hack/internal/trial"
)

// burst is the usual At of a scenario: it fires at at, its Pod runs for 2s;
// every fourth fails with exit code 3 and may retry once.
func burst(at time.Time) func(int) trial.AtSpec {
	return func(i int) trial.AtSpec {
		s := trial.AtSpec{At: at, Command: "echo chaos", Duration: "2s"}
		if i%4 == 3 {
			s.ExitCode, s.BackoffLimit = 3, 1
		}
		return s
	}
}

// selfcheck shows that the judge can fail: one At runs, then, with the
// controller stopped, a Pod is made by hand with that At as its controller
// owner. The judge must report duplicates=1 lost=0.
func (h *harness) selfcheck(ctx context.Context, r *run) error {
	if err := r.create(ctx, "selfcheck", trial.AtSpec{At: time.Now(), Command: "echo once", Duration: "100ms"}); err != nil {
		return err
	}
	if err := r.settle(ctx); err != nil {
		return err
	}
	h.replicas[0].Stop()
	var at cnatv1beta1.At
	if err := h.cl.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: "selfcheck"}, &at); err != nil {
		return err
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: r.Namespace, Name: "selfcheck-by-hand",
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: cnatv1beta1.GroupVersion.String(), Kind: "At", Name: at.Name, UID: at.UID,
				Controller: ptr.To(true),
			}},
		},
		Spec: cluster.SimulatedPodSpec("command", "/bin/sh", "-c", "echo once"),
	}
	if err := h.cl.Client.Create(ctx, pod); err != nil {
		return fmt.Errorf("creating the hand-made duplicate Pod: %w", err)
	}
	return nil
}

// killThroughFiring waits until a second before at, when the run's Ats
// fire, SIGKILLs replica 0 the size's number of times, starting it again
// each time, and lets the run settle. The first kill is aimed: it lands as
// soon as the first Pod of the run is created, when the controller has
// created Pods whose Ats' status does not record them yet
// (judge.KillsInWindow counts whether it did); the others land a random
// 0.3–2.5s after the replica became ready.
func (h *harness) killThroughFiring(ctx context.Context, r *run, at time.Time) error {
	if err := sleepUntil(ctx, at.Add(-time.Second)); err != nil {
		return err
	}
	rep := h.replicas[0]
	nextPod, stop, err := r.newPods(ctx)
	if err != nil {
		return err
	}
	defer stop()
	kills := h.size.kills
	for i := range kills {
		if !rep.Running() {
			if err := rep.start(ctx, false); err != nil {
				return err
			}
		}
		if i == 0 {
			if err := nextPod(); err != nil {
				return err
			}
		} else if err := h.pause(ctx, 300*time.Millisecond, 2500*time.Millisecond); err != nil {
			return err
		}
		if err := r.kill(rep); err != nil {
			return err
		}
		fmt.Printf("chaos %s: SIGKILL %d of %d\n", h.scenario, i+1, kills)
	}
	if err := rep.start(ctx, false); err != nil {
		return err
	}
	return r.settle(ctx)
}

// sigkill: the controller SIGKILLed again and again while the Ats fire.
func (h *harness) sigkill(ctx context.Context, r *run) error {
	at := fireTime(h.size.ats)
	if err := r.createMany(ctx, "k", h.size.ats, burst(at)); err != nil {
		return err
	}
	return h.killThroughFiring(ctx, r, at)
}

// leader: two replicas with leader election; the leader SIGKILLed as it
// creates a batch's first Pod, and in another round SIGSTOPped past its lease, then
// SIGCONTed while the other leads.
func (h *harness) leader(ctx context.Context, r *run) error {
	rounds := h.size.leaderKills + h.size.leaderStops
	per := max(1, h.size.ats/rounds)
	for round := range rounds {
		at := fireTime(per)
		if err := r.createMany(ctx, fmt.Sprintf("l%d", round), per, burst(at)); err != nil {
			return err
		}
		lead, err := leader(ctx, h.replicas, time.Minute)
		if err != nil {
			return err
		}
		if round < h.size.leaderKills {
			// As the leader creates the batch's first Pod.
			nextPod, stop, err := r.newPods(ctx)
			if err == nil {
				err = nextPod()
				stop()
			}
			if err != nil {
				return err
			}
		} else if err := sleepUntil(ctx, at.Add(300*time.Millisecond)); err != nil {
			return err
		}
		attacked := time.Now()
		if round < h.size.leaderKills {
			if err := r.kill(lead); err != nil {
				return err
			}
			next, err := leader(ctx, h.replicas, time.Minute)
			if err != nil {
				return err
			}
			fmt.Printf("chaos leader: leader %d SIGKILLed, replica %d took over after %s\n", lead.index, next.index, time.Since(attacked).Round(100*time.Millisecond))
			if err := lead.start(ctx, true); err != nil {
				return err
			}
			continue
		}
		// The lease lasts 15s (controller-runtime's default): stop the
		// leader for longer, so that the other takes over, then let it
		// run on with what it believed.
		if err := lead.Signal(syscall.SIGSTOP); err != nil {
			return err
		}
		if err := poll.Sleep(ctx, 20*time.Second); err != nil {
			return err
		}
		other := h.replicas[1-lead.index]
		took := other.leads()
		if err := lead.Signal(syscall.SIGCONT); err != nil {
			return err
		}
		fmt.Printf("chaos leader: leader %d SIGSTOPped for 20s (replica %d leading meanwhile: %t), then SIGCONTed\n", lead.index, other.index, took)
	}
	return r.settle(ctx)
}

// apiserver: kube-apiserver and etcd restarted as a batch fires.
func (h *harness) apiserver(ctx context.Context, r *run) error {
	at := fireTime(h.size.ats)
	if err := r.createMany(ctx, "a", h.size.ats, burst(at)); err != nil {
		return err
	}
	if err := sleepUntil(ctx, at.Add(200*time.Millisecond)); err != nil {
		return err
	}
	for i := range h.size.restarts {
		start := time.Now()
		if err := h.restartStorageAndAPI(ctx); err != nil {
			return err
		}
		fmt.Printf("chaos apiserver: etcd and kube-apiserver restart %d of %d took %s\n", i+1, h.size.restarts, time.Since(start).Round(100*time.Millisecond))
		if err := h.pause(ctx, 500*time.Millisecond, 2*time.Second); err != nil {
			return err
		}
	}
	return r.settle(ctx)
}

// webhook: Ats are created while the webhook is up, then refuses
// connections, then hangs, then is up again; the controller keeps running.
// Only the Ats the API server admitted are judged, and none it refused may
// exist.
func (h *harness) webhook(ctx context.Context, r *run) error {
	defer h.proxy.setMode(proxyUp)
	third := max(1, h.size.ats/3)
	// Each At fires 2s after it is created: some fire during the outage.
	soon := func(int) trial.AtSpec {
		return trial.AtSpec{At: time.Now().Add(2 * time.Second), Command: "echo chaos", Duration: "1s"}
	}
	if err := r.createMany(ctx, "before", third, soon); err != nil {
		return err
	}
	attempts := 0
	for _, mode := range []proxyMode{proxyRefuse, proxyHang} {
		h.proxy.setMode(mode)
		var wg sync.WaitGroup
		end := time.Now().Add(h.size.outage)
		for time.Now().Before(end) {
			name := fmt.Sprintf("during-%d", attempts)
			attempts++
			wg.Go(func() { _ = r.create(ctx, name, soon(0)) })
			if err := poll.Sleep(ctx, 250*time.Millisecond); err != nil {
				return err
			}
		}
		h.proxy.setMode(proxyUp)
		wg.Wait()
	}
	r.mu.Lock()
	refused := r.Refused()
	r.mu.Unlock()
	fmt.Printf("chaos webhook: %d of %d creates during the outage refused\n", refused, attempts)
	if err := r.createMany(ctx, "after", h.size.ats-third, soon); err != nil {
		return err
	}
	return r.settle(ctx)
}

// recreate: Ats deleted (--cascade=orphan or the default, background) and
// created again by the same name, with the same command or another: a
// third before they fire, a third while their Pods run, a third after they
// finished (as GitOps tools do).
func (h *harness) recreate(ctx context.Context, r *run) error {
	at := fireTime(h.size.ats)
	spec := func(int) trial.AtSpec { return trial.AtSpec{At: at, Command: "echo first", Duration: "3s"} }
	if err := r.createMany(ctx, "r", h.size.ats, spec); err != nil {
		return err
	}
	waves := []time.Time{at.Add(-1500 * time.Millisecond), at.Add(time.Second), at.Add(7 * time.Second)}
	for wave, when := range waves {
		if err := sleepUntil(ctx, when); err != nil {
			return err
		}
		var wg sync.WaitGroup
		errs := make(chan error, h.size.ats)
		for i := wave; i < h.size.ats; i += len(waves) {
			wg.Go(func() {
				if err := r.recreateOne(ctx, i); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			return err
		}
	}
	return r.settle(ctx)
}

// recreateOne deletes At r-<i> (orphaning its Pods for every other i) and
// creates it again as soon as the name is free, due at once, with the same
// command for half of them and another for the rest.
func (r *run) recreateOne(ctx context.Context, i int) error {
	name := fmt.Sprintf("r-%d", i)
	propagation := metav1.DeletePropagationBackground
	if (i/3)%2 == 0 {
		propagation = metav1.DeletePropagationOrphan
	}
	command := "echo first"
	if (i/6)%2 == 1 {
		command = "echo second"
	}
	at := &cnatv1beta1.At{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: name}}
	if err := r.h.cl.Client.Delete(ctx, at, client.PropagationPolicy(propagation)); err != nil {
		return fmt.Errorf("deleting At %s: %w", name, err)
	}
	gone := func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(r.h.cl.Client.Get(ctx, client.ObjectKeyFromObject(at), &cnatv1beta1.At{})), nil
	}
	if err := poll.Until(ctx, 100*time.Millisecond, time.Minute, gone, func() error {
		return fmt.Errorf("at %s still exists a minute after its deletion", name)
	}); err != nil {
		return err
	}
	return r.create(ctx, name, trial.AtSpec{At: time.Now(), Command: command, Duration: "3s"})
}

// watchPods calls fn with every Pod of the namespace added or updated
// (created: added after the informer's initial list), from when it has
// synced until the returned stop is called.
func (r *run) watchPods(ctx context.Context, fn func(pod *corev1.Pod, created bool)) (stop func(), err error) {
	factory := informers.NewSharedInformerFactoryWithOptions(r.h.cl.Kube, 0, informers.WithNamespace(r.Namespace))
	inf := factory.Core().V1().Pods().Informer()
	handle := func(obj any, created bool) {
		if pod, ok := obj.(*corev1.Pod); ok {
			fn(pod, created)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, initial bool) { handle(obj, !initial) },
		UpdateFunc: func(_, obj any) { handle(obj, false) },
	}); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	factory.Start(wctx.Done())
	if !cache.WaitForCacheSync(wctx.Done(), inf.HasSynced) {
		cancel()
		return nil, errors.New("the Pod informer did not sync")
	}
	return func() { cancel(); factory.Shutdown() }, nil
}

// newPods watches for the Pods of the run created from now on, until stop
// is called: next waits, at most a minute, for the next one (one created
// since the last wait counts).
func (r *run) newPods(ctx context.Context) (next func() error, stop func(), err error) {
	created := make(chan struct{}, 1)
	stop, err = r.watchPods(ctx, func(_ *corev1.Pod, isNew bool) {
		if isNew {
			select {
			case created <- struct{}{}:
			default:
			}
		}
	})
	return func() error {
		select {
		case <-created:
			return nil
		case <-time.After(time.Minute):
			return errors.New("no Pod of the run was created within a minute to aim a kill at")
		case <-ctx.Done():
			return ctx.Err()
		}
	}, stop, err
}

// deletePod deletes a Pod by UID, once.
func (r *run) deletePod(ctx context.Context, pod *corev1.Pod, seen *sync.Map) {
	if pod.DeletionTimestamp != nil {
		return
	}
	if _, loaded := seen.LoadOrStore(pod.UID, true); loaded {
		return
	}
	go func() {
		_ = r.h.cl.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})
	}()
}

// podDelete: the Pods of half of the Ats are deleted as soon as they
// appear, those of a quarter once they run (with a retry left). Those Ats
// must fail (their Pod was deleted), never run again. The running ones
// are deleted while the controller is stopped (SIGSTOP): their kubelet
// kills them and then deletes them again at once, and from then on they
// read like failed Pods a janitor deleted. The controller, continued, gets
// the deletion only as one of the changes its watch delivers, never as the
// state a reconcile reads.
func (h *harness) podDelete(ctx context.Context, r *run) error {
	var seen sync.Map
	stop, err := r.watchPods(ctx, func(pod *corev1.Pod, _ bool) {
		if pod.Labels[deleteLabel] == "at-once" {
			r.deletePod(ctx, pod, &seen)
		}
	})
	if err != nil {
		return err
	}
	defer stop()
	at := fireTime(h.size.ats)
	running := (h.size.ats + 2) / 4 // the Ats i with i%4 == 1
	spec := func(i int) trial.AtSpec {
		s := burst(at)(i)
		switch i % 4 {
		case 0, 2:
			// No retry: a Pod deleted before it was scheduled may still be
			// bound by the scheduler's bind in flight and then killed by
			// its kubelet. Read unscheduled it was deleted; read bound and
			// deleted at once, its kubelet's report decides: either is true.
			s.Labels = map[string]string{deleteLabel: "at-once"}
		case 1:
			s.Labels, s.BackoffLimit, s.Duration = map[string]string{deleteLabel: "running"}, 1, "30s"
		}
		return s
	}
	if err := r.createMany(ctx, "d", h.size.ats, spec); err != nil {
		return err
	}
	if err := sleepUntil(ctx, at); err != nil {
		return err
	}
	if err := r.deleteRunning(ctx, running); err != nil {
		return err
	}
	return r.settle(ctx)
}

// deleteLabel says on an At's Pod template when poddelete deletes its Pod.
const deleteLabel = "chaos.cnat.programming-kubernetes.info/delete"

// deleteRunning waits (at most 20 s) until want Pods labelled to be deleted
// while running run, stops the controller, deletes them, waits (at most
// 30 s) until their kubelet has killed them and deleted them again at once,
// and continues the controller.
func (r *run) deleteRunning(ctx context.Context, want int) error {
	// The Pods are listed with ctx: a list cut short by a wait's timeout is
	// no answer.
	var pods, running []corev1.Pod
	list := func(context.Context) (bool, error) {
		var l corev1.PodList
		err := r.h.cl.Client.List(ctx, &l, client.InNamespace(r.Namespace), client.MatchingLabels{deleteLabel: "running"})
		pods = l.Items
		running = slices.DeleteFunc(slices.Clone(pods), func(p corev1.Pod) bool { return p.Status.Phase != corev1.PodRunning })
		return len(running) >= want, err
	}
	if err := poll.Until(ctx, 200*time.Millisecond, 20*time.Second, list, nil); err != nil {
		return err
	}
	controller := r.h.replicas[0]
	if err := controller.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	defer func() { _ = controller.Signal(syscall.SIGCONT) }()
	deleted, err := deleteUntilKubeletDone(ctx, r.h.cl.Client, running, list, func() []corev1.Pod { return pods })
	if err != nil {
		return err
	}
	fmt.Printf("chaos poddelete: %d running Pods deleted while the controller was stopped; their kubelet killed them and deleted them again at once\n", deleted)
	if deleted == 0 {
		return fmt.Errorf("none of the %d Pods to delete while running ran within 20 s", want)
	}
	return nil
}

// janitor: a janitor deletes every finished Pod at once while the
// controller is SIGKILLed again and again: a Pod may finish and vanish
// between the controller's create and its next look.
func (h *harness) janitor(ctx context.Context, r *run) error {
	var seen sync.Map
	stop, err := r.watchPods(ctx, func(pod *corev1.Pod, _ bool) {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			r.deletePod(ctx, pod, &seen)
		}
	})
	if err != nil {
		return err
	}
	defer stop()
	at := fireTime(h.size.ats)
	spec := func(i int) trial.AtSpec {
		s := burst(at)(i)
		s.Duration = "1s"
		return s
	}
	if err := r.createMany(ctx, "j", h.size.ats, spec); err != nil {
		return err
	}
	return h.killThroughFiring(ctx, r, at)
}

// deleteUntilKubeletDone deletes every Pod of victims (that very Pod: its
// UID) with c, then waits (at most 30 s) until their kubelet has stopped
// them and deleted them again at once, as list, which refreshes current,
// shows. It returns how many it deleted.
func deleteUntilKubeletDone(ctx context.Context, c client.Client, victims []corev1.Pod, list func(context.Context) (bool, error), current func() []corev1.Pod) (int, error) {
	deleted := map[types.UID]bool{}
	for _, p := range victims {
		if err := c.Delete(ctx, &p, client.Preconditions{UID: &p.UID}); err != nil {
			return 0, fmt.Errorf("deleting Pod %s: %w", p.Name, err)
		}
		deleted[p.UID] = true
	}
	waiting := 0
	err := poll.Until(ctx, 200*time.Millisecond, 30*time.Second, func(ctx context.Context) (bool, error) {
		if _, err := list(ctx); err != nil {
			return false, err
		}
		waiting = 0
		for _, p := range current() {
			if deleted[p.UID] && (p.Status.Phase != corev1.PodFailed || ptr.Deref(p.DeletionGracePeriodSeconds, 1) != 0) {
				waiting++
			}
		}
		return waiting == 0, nil
	}, func() error {
		return fmt.Errorf("%d deleted Pods not stopped and deleted again by their kubelet 30 s later", waiting)
	})
	return len(deleted), err
}
