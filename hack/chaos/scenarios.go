package main

import (
	"context"
	"errors"
	"fmt"
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
)

// burst is the usual At of a scenario: it fires at at, its Pod runs for 2s;
// every fourth fails with exit code 3 and may retry once.
func burst(at time.Time) func(int) atSpec {
	return func(i int) atSpec {
		s := atSpec{at: at, command: "echo chaos", duration: "2s"}
		if i%4 == 3 {
			s.exitCode, s.backoffLimit = 3, 1
		}
		return s
	}
}

// selfcheck shows that the judge can fail: one At runs, then, with the
// controller stopped, a Pod is made by hand with that At as its controller
// owner. The judge must report duplicates=1 lost=0.
func (h *harness) selfcheck(ctx context.Context, r *run) error {
	if err := h.replicas[0].start(ctx, false); err != nil {
		return err
	}
	if err := r.create(ctx, "selfcheck", atSpec{at: time.Now(), command: "echo once", duration: "100ms"}); err != nil {
		return err
	}
	if err := r.settle(ctx); err != nil {
		return err
	}
	h.replicas[0].stop()
	var at cnatv1beta1.At
	if err := h.c.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: "selfcheck"}, &at); err != nil {
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
		Spec: simulatedPodSpec([]string{"/bin/sh", "-c", "echo once"}),
	}
	if err := h.c.Create(ctx, pod); err != nil {
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
	created, stop, err := r.newPods(ctx)
	if err != nil {
		return err
	}
	defer stop()
	kills := h.size.kills
	for i := range kills {
		if !rep.running() {
			if err := rep.start(ctx, false); err != nil {
				return err
			}
		}
		if i == 0 {
			if err := waitAimed(ctx, created, time.Minute); err != nil {
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
	if err := h.replicas[0].start(ctx, false); err != nil {
		return err
	}
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
	for _, rep := range h.replicas {
		if err := rep.start(ctx, true); err != nil {
			return err
		}
	}
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
			created, stop, err := r.newPods(ctx)
			if err != nil {
				return err
			}
			err = waitAimed(ctx, created, time.Minute)
			stop()
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
		if err := lead.signal(syscall.SIGSTOP); err != nil {
			return err
		}
		if err := sleep(ctx, 20*time.Second); err != nil {
			return err
		}
		other := h.replicas[1-lead.index]
		took := other.leads()
		if err := lead.signal(syscall.SIGCONT); err != nil {
			return err
		}
		fmt.Printf("chaos leader: leader %d SIGSTOPped for 20s (replica %d leading meanwhile: %t), then SIGCONTed\n", lead.index, other.index, took)
	}
	return r.settle(ctx)
}

// apiserver: kube-apiserver and etcd restarted as a batch fires.
func (h *harness) apiserver(ctx context.Context, r *run) error {
	if err := h.replicas[0].start(ctx, false); err != nil {
		return err
	}
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
	if err := h.replicas[0].start(ctx, false); err != nil {
		return err
	}
	defer h.proxy.setMode(proxyUp)
	third := max(1, h.size.ats/3)
	// Each At fires 2s after it is created: some fire during the outage.
	soon := func(int) atSpec {
		return atSpec{at: time.Now().Add(2 * time.Second), command: "echo chaos", duration: "1s"}
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
			if err := sleep(ctx, 250*time.Millisecond); err != nil {
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
	if err := h.replicas[0].start(ctx, false); err != nil {
		return err
	}
	at := fireTime(h.size.ats)
	spec := func(int) atSpec { return atSpec{at: at, command: "echo first", duration: "3s"} }
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
	if err := r.h.c.Delete(ctx, at, client.PropagationPolicy(propagation)); err != nil {
		return fmt.Errorf("deleting At %s: %w", name, err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		err := r.h.c.Get(ctx, client.ObjectKeyFromObject(at), &cnatv1beta1.At{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("at %s still exists a minute after its deletion", name)
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	return r.create(ctx, name, atSpec{at: time.Now(), command: command, duration: "3s"})
}

// watchPods calls fn with every Pod of the namespace added or updated, until
// the returned stop is called.
func (r *run) watchPods(ctx context.Context, fn func(*corev1.Pod)) (stop func(), err error) {
	handle := func(obj any) {
		if pod, ok := obj.(*corev1.Pod); ok {
			fn(pod)
		}
	}
	return r.podInformer(ctx, cache.ResourceEventHandlerFuncs{
		AddFunc:    handle,
		UpdateFunc: func(_, obj any) { handle(obj) },
	})
}

// podInformer runs an informer on the run's Pods with handler until the
// returned stop is called, once it has synced.
func (r *run) podInformer(ctx context.Context, handler cache.ResourceEventHandler) (stop func(), err error) {
	factory := informers.NewSharedInformerFactoryWithOptions(r.h.cl.Kube, 0, informers.WithNamespace(r.Namespace))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(handler); err != nil {
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

// newPods signals on created, which holds at most one signal, each time a
// Pod of the run is created from now on.
func (r *run) newPods(ctx context.Context) (created <-chan struct{}, stop func(), err error) {
	ch := make(chan struct{}, 1)
	stop, err = r.podInformer(ctx, cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(_ any, isInInitialList bool) {
			if isInInitialList {
				return
			}
			select {
			case ch <- struct{}{}:
			default:
			}
		},
	})
	return ch, stop, err
}

// waitAimed waits for the next signal on created, for at most limit.
func waitAimed(ctx context.Context, created <-chan struct{}, limit time.Duration) error {
	select {
	case <-created:
		return nil
	case <-time.After(limit):
		return fmt.Errorf("no Pod of the run was created within %s to aim a kill at", limit)
	case <-ctx.Done():
		return ctx.Err()
	}
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
		_ = r.h.c.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})
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
	if err := h.replicas[0].start(ctx, false); err != nil {
		return err
	}
	var seen sync.Map
	stop, err := r.watchPods(ctx, func(pod *corev1.Pod) {
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
	spec := func(i int) atSpec {
		s := burst(at)(i)
		switch i % 4 {
		case 0, 2:
			// No retry: a Pod deleted before it was scheduled may still be
			// bound by the scheduler's bind in flight and then killed by
			// its kubelet. Read unscheduled it was deleted; read bound and
			// deleted at once, its kubelet's report decides: either is true.
			s.labels = map[string]string{deleteLabel: "at-once"}
		case 1:
			s.labels, s.backoffLimit, s.duration = map[string]string{deleteLabel: "running"}, 1, "30s"
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
	list := func() ([]corev1.Pod, error) {
		var pods corev1.PodList
		err := r.h.c.List(ctx, &pods, client.InNamespace(r.Namespace), client.MatchingLabels{deleteLabel: "running"})
		return pods.Items, err
	}
	var pods []corev1.Pod
	for deadline := time.Now().Add(20 * time.Second); ; {
		var err error
		if pods, err = list(); err != nil {
			return err
		}
		runs := 0
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning {
				runs++
			}
		}
		if runs >= want || time.Now().After(deadline) {
			break
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
	controller := r.h.replicas[0]
	if err := controller.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	defer func() { _ = controller.signal(syscall.SIGCONT) }()
	deleted := map[types.UID]bool{}
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning {
			continue
		}
		if err := r.h.c.Delete(ctx, &p, client.Preconditions{UID: &p.UID}); err != nil {
			return fmt.Errorf("deleting Pod %s: %w", p.Name, err)
		}
		deleted[p.UID] = true
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		now, err := list()
		if err != nil {
			return err
		}
		waiting := 0
		for _, p := range now {
			if deleted[p.UID] && (p.Status.Phase != corev1.PodFailed || ptr.Deref(p.DeletionGracePeriodSeconds, 1) != 0) {
				waiting++
			}
		}
		if waiting == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d deleted Pods not killed and deleted again by their kubelet 30 s later", waiting)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
	fmt.Printf("chaos poddelete: %d running Pods deleted while the controller was stopped; their kubelet killed them and deleted them again at once\n", len(deleted))
	if len(deleted) == 0 {
		return fmt.Errorf("none of the %d Pods to delete while running ran within 20 s", want)
	}
	return nil
}

// janitor: a janitor deletes every finished Pod at once while the
// controller is SIGKILLed again and again: a Pod may finish and vanish
// between the controller's create and its next look.
func (h *harness) janitor(ctx context.Context, r *run) error {
	if err := h.replicas[0].start(ctx, false); err != nil {
		return err
	}
	var seen sync.Map
	stop, err := r.watchPods(ctx, func(pod *corev1.Pod) {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			r.deletePod(ctx, pod, &seen)
		}
	})
	if err != nil {
		return err
	}
	defer stop()
	at := fireTime(h.size.ats)
	spec := func(i int) atSpec {
		s := burst(at)(i)
		s.duration = "1s"
		return s
	}
	if err := r.createMany(ctx, "j", h.size.ats, spec); err != nil {
		return err
	}
	return h.killThroughFiring(ctx, r, at)
}
