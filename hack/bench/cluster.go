package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/programming-kubernetes/cnat/hack/internal/cluster"
)

const (
	// benchLabel marks what the bench creates (namespaces, nodes), so a run
	// can remove what an interrupted one left behind.
	benchLabel = "cnat.programming-kubernetes.info/bench"
	// kwokNodeAnnotation makes kwok manage a node (hack/kwok/kwokctl.yaml).
	kwokNodeAnnotation = "kwok.x-k8s.io/node"
)

// simulatedPodSpec is the spec of every Pod the bench has run, whoever
// creates it: on a simulated node, which runs it for 1 s with exit code 0
// (hack/kwok/stages.yaml).
func simulatedPodSpec() corev1.PodSpec {
	return cluster.SimulatedPodSpec("run", "/bin/sh", "-c", "true")
}

// ensureNodes creates simulated nodes named cnat-bench-<i> until there are
// count of them, each with room for podsPerNode Pods, and waits until kwok
// reports them Ready.
func ensureNodes(ctx context.Context, cs kubernetes.Interface, count, podsPerNode int) error {
	for i := range count {
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        fmt.Sprintf("cnat-bench-%03d", i),
				Annotations: map[string]string{kwokNodeAnnotation: "fake"},
				Labels: map[string]string{
					cluster.SimulatedLabel:   "true",
					benchLabel:               "true",
					"type":                   "kwok",
					"kubernetes.io/hostname": fmt.Sprintf("cnat-bench-%03d", i),
					"kubernetes.io/os":       "linux",
				},
			},
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: cluster.SimulatedLabel, Value: "true", Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{
				Capacity:    nodeResources(podsPerNode),
				Allocatable: nodeResources(podsPerNode),
			},
		}
		if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating simulated node %s: %w", node.Name, err)
		}
	}
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: benchLabel + "=true"})
		if err != nil {
			return false, err
		}
		ready := 0
		for _, n := range nodes.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready >= count, nil
	})
}

func nodeResources(pods int) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourcePods:   *resource.NewQuantity(int64(pods), resource.DecimalSI),
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
	}
}

// deleteNodes removes the simulated nodes the bench created.
func deleteNodes(ctx context.Context, cs kubernetes.Interface) error {
	err := cs.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: benchLabel + "=true"})
	if err != nil {
		return fmt.Errorf("deleting the bench's simulated nodes: %w", err)
	}
	return nil
}

// createNamespace creates a fresh namespace for one stage, labelled as the
// bench's.
func createNamespace(ctx context.Context, c *cluster.Clients, name string) error {
	return cluster.CreateNamespace(ctx, c.Client, name, map[string]string{benchLabel: "true"})
}

// removeLeftovers deletes the namespaces an interrupted run left behind.
func removeLeftovers(ctx context.Context, c *cluster.Clients) error {
	list, err := c.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: benchLabel + "=true"})
	if err != nil {
		return fmt.Errorf("listing the bench's namespaces: %w", err)
	}
	for _, ns := range list.Items {
		fmt.Printf("bench: removing namespace %s left by an earlier run\n", ns.Name)
		if err := cleanNamespace(ctx, c, ns.Name); err != nil {
			return err
		}
	}
	return nil
}

// cleanNamespace empties and deletes a stage's namespace. Ats are deleted
// first, while the controller runs, so it can release what it holds on its
// Pods; then the bench deletes the Pods itself (terminal Pods go at once),
// and only if Pods are still held by finalizers a minute later does it
// remove those, as a last resort. The namespace's Events go before the
// namespace, and are waited for.
func cleanNamespace(ctx context.Context, c *cluster.Clients, namespace string) error {
	background := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &background}
	if err := deleteAll(ctx, c.Dynamic.Resource(atResource).Namespace(namespace), "Ats", namespace, opts); err != nil {
		return err
	}
	if err := c.Kube.BatchV1().CronJobs(namespace).DeleteCollection(ctx, opts, metav1.ListOptions{}); err != nil {
		return fmt.Errorf("deleting the CronJobs of %s: %w", namespace, err)
	}
	if err := c.Kube.BatchV1().Jobs(namespace).DeleteCollection(ctx, opts, metav1.ListOptions{}); err != nil {
		return fmt.Errorf("deleting the Jobs of %s: %w", namespace, err)
	}
	// Pods still running are deleted gracefully: kwok removes about 50 a
	// second.
	pods := c.Dynamic.Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace(namespace)
	if err := deleteAll(ctx, pods, "Pods", namespace, metav1.DeleteOptions{}); err != nil {
		if err := stripPodFinalizers(ctx, c.Kube, namespace); err != nil {
			return err
		}
		if err := waitEmpty(ctx, countOf(pods), time.Minute); err != nil {
			return fmt.Errorf("waiting for the Pods of %s to go: %w", namespace, err)
		}
	}
	if err := removeEvents(ctx, c.Kube, namespace); err != nil {
		return err
	}
	if err := c.Kube.CoreV1().Namespaces().Delete(ctx, namespace, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting namespace %s: %w", namespace, err)
	}
	return waitEmpty(ctx, func(ctx context.Context) (int, error) {
		_, err := c.Kube.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return 0, nil
		}
		return 1, err
	}, 2*time.Minute)
}

// deleteAll deletes a collection until none is left, for at most five
// minutes. One DeleteCollection of tens of thousands of objects can outlast
// the API server's request timeout; it is then sent again for what is left.
func deleteAll(ctx context.Context, collection dynamic.ResourceInterface, what, namespace string, opts metav1.DeleteOptions) error {
	const timeout = 5 * time.Minute
	deadline := time.Now().Add(timeout)
	for {
		err := collection.DeleteCollection(ctx, opts, metav1.ListOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			fmt.Printf("bench: deleting the %s of %s: %v; trying again\n", what, namespace, err)
		}
		waitErr := waitEmpty(ctx, countOf(collection), min(30*time.Second, time.Until(deadline)))
		if waitErr == nil {
			return nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return fmt.Errorf("deleting the %s of %s: still there after %s: %w", what, namespace, timeout, waitErr)
		}
	}
}

// countOf counts whether anything is left of a collection (a list of at
// most one); nothing if its kind is gone.
func countOf(collection dynamic.ResourceInterface) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		l, err := collection.List(ctx, metav1.ListOptions{Limit: 1})
		if apierrors.IsNotFound(err) {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		return len(l.Items), nil
	}
}

// stripPodFinalizers removes the finalizers of the Pods left in namespace.
func stripPodFinalizers(ctx context.Context, cs kubernetes.Interface, namespace string) error {
	pods, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing the Pods left in %s: %w", namespace, err)
	}
	var held []string
	for _, p := range pods.Items {
		if len(p.Finalizers) > 0 {
			held = append(held, p.Name)
		}
	}
	if len(held) == 0 {
		return nil
	}
	fmt.Printf("bench: %d Pods in %s still held by finalizers; removing them\n", len(held), namespace)
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	return cluster.ForEach(ctx, len(held), 20, func(ctx context.Context, i int) error {
		_, err := cs.CoreV1().Pods(namespace).Patch(ctx, held[i], types.MergePatchType, patch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

// waitEmpty polls count until it returns 0.
func waitEmpty(ctx context.Context, count func(context.Context) (int, error), timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		n, err := count(ctx)
		return n == 0, err
	})
}

// watchedNamespace creates the stage's namespace (the run's prefix and
// suffix) and starts recording the given kinds in it, until stop is
// called; ctx is the recording's context.
func (b *bench) watchedNamespace(ctx context.Context, suffix string, kinds ...string) (ns string, rec *recorder, watchCtx context.Context, stop context.CancelFunc, err error) {
	ns = b.opts.namespacePrefix + "-" + suffix
	if err := createNamespace(ctx, b.c, ns); err != nil {
		return "", nil, nil, nil, err
	}
	watchCtx, stop = context.WithCancel(ctx)
	if rec, err = watchNamespace(watchCtx, b.c.Kube, b.c.Dynamic, ns, kinds...); err != nil {
		stop()
		return "", nil, nil, nil, err
	}
	return ns, rec, watchCtx, stop, nil
}
