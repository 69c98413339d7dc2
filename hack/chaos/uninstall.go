package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/hack/internal/poll"
	"github.com/programming-kubernetes/cnat/hack/internal/trial"
)

// uninstall: with runs in flight (Pods running), cnat is uninstalled as the
// README says: every At deleted while the controller runs, then a wait until
// no Pod carries the tracking finalizer (the controller releases each),
// then the overlay deleted. Then the scenario's namespace is deleted: no
// Pod with the finalizer and no namespace may be left. It removes cnat
// from the cluster, so it runs last; hack/chaos.sh installs cnat again.
func (h *harness) uninstall(ctx context.Context, r *run) error {
	at := fireTime(h.size.ats)
	spec := func(i int) trial.AtSpec {
		s := burst(at)(i)
		s.Duration = "30s"
		return s
	}
	if err := r.createMany(ctx, "u", h.size.ats, spec); err != nil {
		return err
	}
	// Until the Pods run, for at most 10 s after the Ats' time.
	running := 0
	if err := poll.Until(ctx, 200*time.Millisecond, time.Until(at.Add(10*time.Second)), func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := h.cl.Client.List(ctx, &pods, client.InNamespace(r.Namespace)); err != nil {
			return false, err
		}
		running = len(slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool { return p.Status.Phase != corev1.PodRunning }))
		return running >= h.size.ats, nil
	}, nil); err != nil {
		return err
	}
	fmt.Printf("chaos uninstall: %d Pods running; uninstalling as the README says\n", running)
	start := time.Now()
	if err := h.kubectl(ctx, "delete", "ats", "--all", "--all-namespaces", "--wait=false"); err != nil {
		return err
	}
	// The README waits with kubectl wait --for=delete on every Pod labelled
	// cnat.programming-kubernetes.info/at. What must go is the tracking
	// finalizer: a Pod orphaned with its At (--cascade=orphan, as the
	// recreate scenario does) keeps the label, is released and stays, and
	// that wait would never end. So: until no Pod carries the finalizer.
	var tracked, orphans []string
	released := func(ctx context.Context) (done bool, err error) {
		tracked, orphans, err = h.cnatPods(ctx)
		return len(tracked) == 0, err
	}
	if err := poll.Until(ctx, time.Second, 5*time.Minute, released, func() error {
		return fmt.Errorf("%d Pods still carry the tracking finalizer 5 minutes after every At was deleted, e.g. %s", len(tracked), tracked[0])
	}); err != nil {
		return err
	}
	if len(orphans) > 0 {
		fmt.Printf("chaos uninstall: note: %d released Pods keep the label %s (orphaned with their At, e.g. %s): a kubectl wait --for=delete on that label would wait for them in vain, which is why the README waits for the tracking finalizer\n",
			len(orphans), cnatv1beta1.LabelAt, orphans[0])
	}
	fmt.Printf("chaos uninstall: every At deleted and no Pod carries the tracking finalizer after %s\n", time.Since(start).Round(100*time.Millisecond))
	h.stopReplicas()
	if err := h.kubectl(ctx, "delete", "-k", "kustomize/overlays/local", "--ignore-not-found", "--wait=true", "--timeout=5m"); err != nil {
		return err
	}
	fmt.Printf("chaos uninstall: the overlay deleted after %s\n", time.Since(start).Round(100*time.Millisecond))

	// Nothing may be left Terminating: no Pod, and the scenario's namespace
	// goes away.
	if err := h.cl.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.Namespace}}); err != nil {
		return err
	}
	gone := func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(h.cl.Client.Get(ctx, client.ObjectKey{Name: r.Namespace}, &corev1.Namespace{})), nil
	}
	if err := poll.Until(ctx, 500*time.Millisecond, 2*time.Minute, gone, func() error {
		r.breach("namespace %s still Terminating two minutes after its deletion", r.Namespace)
		return nil
	}); err != nil {
		return err
	}
	tracked, _, err := h.cnatPods(ctx)
	if err != nil {
		return err
	}
	for _, p := range tracked {
		r.breach("Pod %s left after the uninstall with the tracking finalizer", p)
	}
	var namespaces corev1.NamespaceList
	if err := h.cl.Client.List(ctx, &namespaces); err != nil {
		return err
	}
	for _, ns := range namespaces.Items {
		if ns.DeletionTimestamp != nil && strings.HasPrefix(ns.Name, "chaos-") || ns.Name == "cnat-system" {
			r.breach("namespace %s left after the uninstall (phase %s)", ns.Name, ns.Status.Phase)
		}
	}
	fmt.Printf("chaos uninstall: namespace %s gone, no Pod of cnat's left, %s after the uninstall began\n", r.Namespace, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// cnatPods lists the Pods labelled as an At's in every namespace: those
// that still carry the tracking finalizer, and the released ones without
// an owner (Pods of Ats deleted with --cascade=orphan, which nothing will
// delete), as namespace/name. Released Pods of a deleted At that still name
// it as their owner are the garbage collector's, and soon gone.
func (h *harness) cnatPods(ctx context.Context) (tracked, released []string, err error) {
	var pods corev1.PodList
	if err := h.cl.Client.List(ctx, &pods, client.HasLabels{cnatv1beta1.LabelAt}); err != nil {
		return nil, nil, fmt.Errorf("listing cnat's Pods: %w", err)
	}
	for _, p := range pods.Items {
		name := p.Namespace + "/" + p.Name
		switch {
		case slices.Contains(p.Finalizers, cnatv1beta1.TrackingFinalizer):
			tracked = append(tracked, name)
		case metav1.GetControllerOfNoCopy(&p) == nil:
			// Orphaned: the garbage collector will not delete it.
			released = append(released, name)
		}
	}
	return tracked, released, nil
}

// kubectl runs kubectl as the administrator, from the repository's root
// (hack/chaos.sh puts bin/ on the PATH).
func (h *harness) kubectl(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", h.cfg.kubeconfig}, args...)...)
	// What each step deleted or waited for is noise; its errors are not.
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kubectl %s: %w", strings.Join(args, " "), err)
	}
	return nil
}
