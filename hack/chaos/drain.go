package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/hack/internal/cluster"
	"github.com/programming-kubernetes/cnat/hack/internal/poll"
	"github.com/programming-kubernetes/cnat/hack/internal/trial"
)

// drainedRun is how long the Pods of the drain scenario run: long enough to
// be evicted while they run.
const drainedRun = 15 * time.Second

// drainedStart is how long the Pods of every third At of the drain scenario
// stay Pending on their node before they start: long enough to be evicted
// before their command started.
const drainedStart = 30 * time.Second

// drainedCPU is the CPU each Pod of the drain scenario requests: what the
// scheduler frees by preempting them.
const drainedCPU = "100m"

// drain: Ats due together whose Pods run drainedRun, half with a retry
// (backoffLimit 1), every third one's Pod held Pending on its node for
// drainedStart; once they are all on their nodes, a Pod of a higher
// priority that needs all the CPU of the last simulated node makes the
// scheduler preempt every Pod of cnat's there; then the other simulated
// nodes are drained one after another, as kubectl drain does: cordoned,
// every Pod of the scenario on the node evicted through the Eviction API,
// uncordoned once they stopped. A preempted or evicted run is never
// Succeeded; an At whose Pod was disrupted before its command started runs
// again without using a retry (so also with backoffLimit 0); an At with a
// retry left runs again (on another node), one without fails (Disrupted).
func (h *harness) drain(ctx context.Context, r *run) error {
	stop := r.Sample(ctx, 2*time.Second)
	defer stop()
	nodes := h.nodes
	if len(nodes) < 2 {
		return fmt.Errorf("drain needs two simulated nodes, one to drain and one to take the retries; the cluster has %d", len(nodes))
	}
	at := fireTime(h.size.ats)
	spec := func(i int) trial.AtSpec {
		s := trial.AtSpec{At: at, Command: "echo chaos", Duration: drainedRun.String(), CPU: drainedCPU}
		if i%2 == 1 {
			s.BackoffLimit = 1
		}
		if i%3 == 2 {
			s.StartDelay = drainedStart.String()
		}
		return s
	}
	if err := r.createMany(ctx, "n", h.size.ats, spec); err != nil {
		return err
	}
	// Until every At's Pod is on its node, and runs unless its start is
	// held, for at most 10 s after their time.
	if err := sleepUntil(ctx, at); err != nil {
		return err
	}
	placed := func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := h.cl.Client.List(ctx, &pods, client.InNamespace(r.Namespace)); err != nil {
			return false, err
		}
		placed := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning || p.Spec.NodeName != "" && p.Annotations[cluster.AnnotationStartDelay] != "" {
				placed++
			}
		}
		return placed >= h.size.ats, nil
	}
	if err := poll.Until(ctx, 200*time.Millisecond, time.Until(at.Add(10*time.Second)), placed, nil); err != nil {
		return err
	}
	defer func() {
		for _, node := range nodes {
			_ = h.cordon(context.Background(), node, false)
		}
	}()
	preempted, unblock, err := r.preemptNode(ctx, nodes[len(nodes)-1])
	defer unblock()
	if err != nil {
		return err
	}
	fmt.Printf("chaos drain: %d Pods preempted on node %s, %s after the Ats' time\n", preempted, nodes[len(nodes)-1], time.Since(at).Round(100*time.Millisecond))
	evicted := 0
	for _, node := range nodes[:len(nodes)-1] {
		n, err := r.drainNode(ctx, node)
		if err != nil {
			return err
		}
		evicted += n
	}
	fmt.Printf("chaos drain: %d Pods evicted from %d of %d simulated nodes, %s after the Ats' time\n", evicted, len(nodes)-1, len(nodes), time.Since(at).Round(100*time.Millisecond))
	return r.settle(ctx)
}

// cordon marks the node unschedulable, or schedulable again.
func (h *harness) cordon(ctx context.Context, node string, unschedulable bool) error {
	patch := fmt.Appendf(nil, `{"spec":{"unschedulable":%t}}`, unschedulable)
	return h.cl.Client.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, client.RawPatch(types.MergePatchType, patch))
}

// drainNode cordons the node, evicts every Pod of cnat's in the scenario's
// namespace on it that has not finished, waits (at most a minute) until
// they stopped, and uncordons it. It returns how many it evicted.
func (r *run) drainNode(ctx context.Context, node string) (int, error) {
	if err := r.h.cordon(ctx, node, true); err != nil {
		return 0, fmt.Errorf("cordoning %s: %w", node, err)
	}
	pods, err := r.nodePods(ctx, node)
	if err != nil {
		return 0, err
	}
	pods = slices.DeleteFunc(pods, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil || finished(&p) })
	var (
		mu      sync.Mutex
		evicted []types.UID
	)
	err = cluster.ForEach(ctx, len(pods), len(pods), func(ctx context.Context, i int) error {
		pod := pods[i]
		err := r.h.cl.Kube.PolicyV1().Evictions(r.Namespace).Evict(ctx, &policyv1.Eviction{
			ObjectMeta:    metav1.ObjectMeta{Namespace: r.Namespace, Name: pod.Name},
			DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}},
		})
		switch {
		case err == nil:
			mu.Lock()
			defer mu.Unlock()
			evicted = append(evicted, pod.UID)
		case !apierrors.IsNotFound(err) && !apierrors.IsConflict(err): // gone, or another Pod by now: skipped
			return fmt.Errorf("evicting Pod %s/%s: %w", r.Namespace, pod.Name, err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	// kubectl drain waits until the evicted Pods are gone; these stay (the
	// tracking finalizer) until the controller recorded them: stopped is
	// enough.
	running := 0
	if err := poll.Until(ctx, 200*time.Millisecond, time.Minute, func(ctx context.Context) (bool, error) {
		now, err := r.nodePods(ctx, node)
		running = len(slices.DeleteFunc(now, func(p corev1.Pod) bool { return !slices.Contains(evicted, p.UID) || finished(&p) }))
		return running == 0, err
	}, func() error {
		return fmt.Errorf("%d evicted Pods on %s still not stopped a minute later", running, node)
	}); err != nil {
		return 0, err
	}
	fmt.Printf("chaos drain: node %s drained: %d Pods evicted\n", node, len(evicted))
	return len(evicted), r.h.cordon(ctx, node, false)
}

// nodePods lists the Pods of cnat's in the run's namespace on node.
func (r *run) nodePods(ctx context.Context, node string) ([]corev1.Pod, error) {
	var pods corev1.PodList
	err := r.h.cl.Client.List(ctx, &pods, client.InNamespace(r.Namespace), client.HasLabels{cnatv1beta1.LabelAt}, client.MatchingFields{"spec.nodeName": node})
	if err != nil {
		return nil, fmt.Errorf("listing the Pods on %s: %w", node, err)
	}
	return pods.Items, nil
}

// finished reports whether the Pod is Succeeded or Failed.
func finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// preemptorPriority is the priority of the Pod that preempts cnat's.
const preemptorPriority = "chaos-preemptor"

// preemptNode creates a Pod of a higher priority (a PriorityClass of its
// own) bound by its node selector to node and requesting all of its CPU:
// the scheduler preempts the Pods of cnat's there (DisruptionTarget,
// PreemptionByScheduler) and deletes them with their grace period. It waits
// (at most a minute) until every Pod of cnat's that was running or pending
// on the node has stopped, and returns how many of them the scheduler
// marked preempted, and a func that deletes the preemptor and its class.
func (r *run) preemptNode(ctx context.Context, node string) (int, func(), error) {
	c := r.h.cl.Client
	class := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: preemptorPriority}, Value: 1_000_000}
	if err := c.Create(ctx, class); err != nil && !apierrors.IsAlreadyExists(err) {
		return 0, func() {}, fmt.Errorf("creating PriorityClass %s: %w", preemptorPriority, err)
	}
	var n corev1.Node
	if err := c.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
		return 0, func() {}, fmt.Errorf("reading node %s: %w", node, err)
	}
	preemptor := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: "preemptor"},
		Spec: corev1.PodSpec{
			PriorityClassName: preemptorPriority,
			NodeSelector:      map[string]string{corev1.LabelHostname: node},
			Tolerations:       []corev1.Toleration{cluster.SimulatedToleration},
			Containers: []corev1.Container{{
				Name: "hog", Image: "busybox:1.37",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: n.Status.Allocatable[corev1.ResourceCPU]}},
			}},
		},
	}
	unblock := func() {
		_ = c.Delete(context.Background(), preemptor, client.GracePeriodSeconds(0))
		_ = c.Delete(context.Background(), class)
	}
	victims, err := r.nodePods(ctx, node)
	if err != nil {
		return 0, unblock, err
	}
	if err := c.Create(ctx, preemptor); err != nil {
		return 0, unblock, fmt.Errorf("creating the preemptor on %s: %w", node, err)
	}
	preempted := map[types.UID]bool{}
	running := 0
	// One read of the node's Pods a round: a victim no longer listed has
	// been recorded and released, so it stopped.
	stopped := func(ctx context.Context) (bool, error) {
		now, err := r.nodePods(ctx, node)
		if err != nil {
			return false, err
		}
		running = 0
		for _, p := range now {
			if i := slices.IndexFunc(victims, func(v corev1.Pod) bool { return v.UID == p.UID }); i < 0 || finished(&victims[i]) {
				continue
			}
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.DisruptionTarget && cond.Status == corev1.ConditionTrue && cond.Reason == "PreemptionByScheduler" {
					preempted[p.UID] = true
				}
			}
			if !finished(&p) {
				running++
			}
		}
		return running == 0, nil
	}
	if err := poll.Until(ctx, 500*time.Millisecond, time.Minute, stopped, func() error {
		return fmt.Errorf("%d Pods on %s still not stopped a minute after the preemptor came (%d preempted)", running, node, len(preempted))
	}); err != nil {
		return 0, unblock, err
	}
	if len(preempted) == 0 {
		return 0, unblock, fmt.Errorf("the scheduler preempted none of the %d Pods on %s", len(victims), node)
	}
	return len(preempted), unblock, nil
}
