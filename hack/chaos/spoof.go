package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/hack/internal/cluster"
	"github.com/programming-kubernetes/cnat/hack/internal/trial"
)

// spoofUser is the user the spoof scenario impersonates: bound, in the
// scenario's namespace only, to a Role with every verb on Pods that a
// forger needs, and nothing else.
const spoofUser = "chaos-pod-writer"

// podClaimsRefusal is what the API server says when the policy
// cnat-pod-claims refuses a write.
const podClaimsRefusal = "ValidatingAdmissionPolicy 'cnat-pod-claims'"

// spoof: a user who may create, get, list, patch, update and delete Pods in
// the namespace (never the administrator) forges the attempt-1 Pod of every
// At not yet due (named as the controller would name it, with cnat's
// labels, its tracking finalizer and a controller ownerReference to the
// At), and, while cnat's Pods run, removes and changes their labels, strips
// their finalizer and forges their attempt-2 Pod. The API server must refuse
// every one (the policy cnat-pod-claims); a write that gets through is a
// breach. The Ats must run as if nothing happened.
func (h *harness) spoof(ctx context.Context, r *run) error {
	stop := r.Sample(ctx, 2*time.Second)
	defer stop()
	forger, err := r.impersonate(ctx)
	if err != nil {
		return err
	}
	sp := &spoofing{r: r, c: forger}

	half := max(1, h.size.ats/2)
	at := fireTime(h.size.ats)
	later := at.Add(15 * time.Second)
	runs := func(int) trial.AtSpec { return trial.AtSpec{At: at, Command: "echo chaos", Duration: "8s"} }
	waits := func(int) trial.AtSpec { return trial.AtSpec{At: later, Command: "echo later", Duration: "1s"} }

	// The Ats that run first: their Pods are attacked once they run.
	var seen sync.Map
	var wg sync.WaitGroup
	defer wg.Wait()
	stopWatch, err := r.watchPods(ctx, func(pod *corev1.Pod, _ bool) {
		if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil || !strings.HasPrefix(pod.Labels[cnatv1beta1.LabelAt], "now-") {
			return
		}
		if _, loaded := seen.LoadOrStore(pod.UID, true); loaded {
			return
		}
		wg.Go(func() { sp.tamper(ctx, pod.DeepCopy()) })
	})
	if err != nil {
		return err
	}
	defer stopWatch()
	if err := r.createMany(ctx, "now", half, runs); err != nil {
		return err
	}
	if err := r.createMany(ctx, "later", h.size.ats-half, waits); err != nil {
		return err
	}
	// The Ats not yet due: their first attempt forged.
	var ats cnatv1beta1.AtList
	if err := h.cl.Client.List(ctx, &ats, client.InNamespace(r.Namespace)); err != nil {
		return err
	}
	var forging sync.WaitGroup
	for i := range ats.Items {
		at := &ats.Items[i]
		if strings.HasPrefix(at.Name, "later-") {
			forging.Go(func() { sp.forge(ctx, at, 1) })
		}
	}
	forging.Wait()
	if time.Now().After(later) {
		return errors.New("the forgeries took until the Ats they forged were due: the scenario proves nothing")
	}
	if err := sleepUntil(ctx, later); err != nil {
		return err
	}
	err = r.settle(ctx)
	wg.Wait()
	if n := sp.attacks.Load(); n > 0 {
		fmt.Printf("chaos spoof: %d of %d forgeries and tamperings refused by the policy cnat-pod-claims (%d Pods tampered with)\n",
			sp.refused.Load(), n, sp.tampered.Load())
	}
	if sp.tampered.Load() == 0 {
		return errors.New("no running Pod of cnat's was tampered with: the scenario proves nothing")
	}
	return err
}

// impersonate gives the spoof user its Role in the namespace and returns a
// client that acts as that user.
func (r *run) impersonate(ctx context.Context) (client.Client, error) {
	if err := r.grant(ctx, spoofUser, spoofUser, rbacv1.PolicyRule{
		APIGroups: []string{""}, Resources: []string{"pods"},
		Verbs: []string{"create", "get", "list", "patch", "update", "delete"},
	}); err != nil {
		return nil, err
	}
	return r.clientAs(ctx, spoofUser)
}

// grant binds user, in the namespace, to a Role name with the rules given.
func (r *run) grant(ctx context.Context, user, name string, rules ...rbacv1.PolicyRule) error {
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: name}, Rules: rules}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	for _, obj := range []client.Object{role, binding} {
		if err := r.h.cl.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %T %s: %w", obj, name, err)
		}
	}
	return nil
}

// clientAs returns a client that acts as user, once an ordinary Pod (dry
// run) is admitted from it: the user may create Pods, or the refusals of
// its attacks would prove nothing.
func (r *run) clientAs(ctx context.Context, user string) (client.Client, error) {
	rc := rest.CopyConfig(r.h.cl.Config)
	rc.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(rc, client.Options{Scheme: r.h.cl.Scheme})
	if err != nil {
		return nil, err
	}
	// RBAC takes effect through the API server's informers: wait for it.
	what := fmt.Sprintf("user %s allowed to create an ordinary Pod after its RoleBinding", user)
	if _, err := r.awaitAdmission(ctx, c, nil, what, admitted); err != nil {
		return nil, err
	}
	return c, nil
}

// spoofing counts the forger's attempts.
type spoofing struct {
	r                          *run
	c                          client.Client
	attacks, refused, tampered atomic.Int64
}

// attack counts one write the API server must refuse: a 403 of the policy
// cnat-pod-claims. Anything else — admitted, or refused for another reason,
// which would hide whether the policy holds — is a breach.
func (s *spoofing) attack(what string, err error) {
	s.attacks.Add(1)
	switch {
	case err == nil:
		s.r.breach("%s: admitted", what)
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), podClaimsRefusal):
		s.refused.Add(1)
	default:
		s.r.breach("%s: not refused by the policy cnat-pod-claims: %v", what, err)
	}
}

// forge creates, as the forger, the Pod the controller would make for the
// At's attempt: its name, cnat's labels, the tracking finalizer, a
// controller ownerReference to the At (without blockOwnerDeletion, so that
// only the policy stands in the way).
func (s *spoofing) forge(ctx context.Context, at *cnatv1beta1.At, attempt int) {
	pod := s.r.probePod(map[string]string{
		cnatv1beta1.LabelAt:      at.Name,
		cnatv1beta1.LabelAtUID:   string(at.UID),
		cnatv1beta1.LabelAttempt: fmt.Sprint(attempt),
	})
	pod.Name = fmt.Sprintf("%s-%s-%d", at.Name, string(at.UID)[:8], attempt)
	pod.Finalizers = []string{cnatv1beta1.TrackingFinalizer}
	pod.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: cnatv1beta1.GroupVersion.String(), Kind: "At", Name: at.Name, UID: at.UID, Controller: ptr.To(true),
	}}
	pod.Annotations = map[string]string{cluster.AnnotationDuration: "1s"}
	s.attack(fmt.Sprintf("forging Pod %s of At %s", pod.Name, at.Name), s.c.Create(ctx, pod))
}

// tamper, as the forger, removes and changes the claims of a running Pod of
// cnat's, strips its tracking finalizer, and forges the next attempt's Pod.
func (s *spoofing) tamper(ctx context.Context, pod *corev1.Pod) {
	s.tampered.Add(1)
	target := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}}
	for _, p := range []struct{ what, patch string }{
		{"removing the at label", fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, cnatv1beta1.LabelAt)},
		{"changing the at-uid label", fmt.Sprintf(`{"metadata":{"labels":{%q:"forged"}}}`, cnatv1beta1.LabelAtUID)},
		{"changing the attempt label", fmt.Sprintf(`{"metadata":{"labels":{%q:"9"}}}`, cnatv1beta1.LabelAttempt)},
		// Released, a Pod leaves the controller's cache: on a running Pod,
		// the At would lose sight of its run.
		{"labelling it released", fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, cnatv1beta1.LabelReleased)},
		{"removing the ownerReference", `{"metadata":{"ownerReferences":null}}`},
	} {
		err := s.c.Patch(ctx, target, client.RawPatch(types.MergePatchType, []byte(p.patch)))
		s.attack(fmt.Sprintf("%s of Pod %s", p.what, pod.Name), err)
	}
	// Strip the finalizer with an update, as kubectl edit would: read
	// again and retried when the kubelet wrote the Pod in between (a 409
	// says nothing of the policy). A Pod gone, or whose run ended and was
	// released by cnat meanwhile, has no finalizer left to strip: an update
	// that changes nothing is no attack.
	var gone bool
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live := &corev1.Pod{}
		if err := s.c.Get(ctx, client.ObjectKeyFromObject(pod), live); err != nil || !slices.Contains(live.Finalizers, cnatv1beta1.TrackingFinalizer) {
			gone = true
			return nil
		}
		live.Finalizers = slices.DeleteFunc(live.Finalizers, func(f string) bool { return f == cnatv1beta1.TrackingFinalizer })
		return s.c.Update(ctx, live)
	})
	if !gone {
		s.attack(fmt.Sprintf("removing the tracking finalizer of Pod %s", pod.Name), err)
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		s.r.breach("Pod %s has no controller ownerReference", pod.Name)
		return
	}
	at := &cnatv1beta1.At{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: ref.Name, UID: ref.UID}}
	s.forge(ctx, at, 2)
}
