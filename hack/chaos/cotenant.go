package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/hack/internal/cluster"
	"github.com/programming-kubernetes/cnat/hack/internal/poll"
	"github.com/programming-kubernetes/cnat/hack/internal/trial"
)

// The users of the cotenant scenario: a co-tenant who may create, patch and
// delete Pods, patch their status and evict them in the namespace (and
// nothing else), and the author of some Ats, who may create Ats and Pods
// until the second right is revoked before the Ats' time.
const (
	cotenantUser = "chaos-cotenant"
	authorUser   = "chaos-at-author"
	// authorPods is the Role and RoleBinding that let the author create
	// Pods: deleted before the Ats' time.
	authorPods = "chaos-at-author-pods"
)

// nowhereLabel in a decoy's nodeSelector keeps it unscheduled: only its
// status, forged, ever says it ran.
const nowhereLabel = "chaos.cnat.programming-kubernetes.info/nowhere"

// cotenantGroups name the Ats of the cotenant scenario by what is done to
// them: At i is <group>-<i> of group i % len(cotenantGroups).
var cotenantGroups = []string{
	"decoy",    // a Pod under its attempt-1 name, owner kind Decoy with its UID, claims and Succeeded forged through pods/status
	"claimed",  // a Pod under its attempt-1 name with cnat's claims, owner of another kind in cnat's group
	"relabel",  // its running Pod labelled released, or stripped of its claims, through pods/status
	"released", // its template carries cnat's released label
	"otherat",  // its template carries cnat's at label, naming another At
	"force",    // its running Pod deleted with grace period 0
	"image",    // its running Pod's image changed
	"revoked",  // made by a user whose right to create Pods is revoked before its time
	"limited",  // a LimitRange refuses its Pod for 8 s at its time
	"failover", // its running Pod deleted gracefully while the controller is down
}

// limitedCPU is the limited Ats' CPU request; the LimitRange's default
// limit (limitRangeCPU) is below it.
const (
	limitedCPU    = "500m"
	limitRangeCPU = "100m"
)

// cotenancy counts what the co-tenant did and what the API server let
// through.
type cotenancy struct {
	r      *run
	tenant client.Client
	// attacks are the writes the Pod-claim policy must refuse; refused
	// those it did.
	attacks, refused atomic.Int64
	// decoys are the decoy Pods admitted, by name; decoysRefused those
	// refused.
	decoys        sync.Map
	decoysRefused atomic.Int64
	// templates are Ats with cnat's keys in their template admitted;
	// templatesRefused those refused naming the key.
	templates, templatesRefused atomic.Int64
	forced, imagesPatched       atomic.Int64
	// deleteAfter are the Ats with cnat's keys in their template deleted
	// once they are finished: their Pods must not stay Terminating.
	deleteAfter sync.Map
}

// cotenant: a co-tenant who has read cnat's code attacks it with the rights
// a user is commonly given in a shared namespace (create, patch and delete
// Pods, patch pods/status, create pods/eviction), each attack aimed at
// other Ats (cotenantGroups): decoy Pods under an At's Pod name, claims and
// a Succeeded status forged or stripped through pods/status, cnat's keys in
// templates, forced deletions, a changed image, an author whose rights are
// revoked, a LimitRange at the Ats' time, and graceful deletions across a
// controller failover. Writes the Pod-claim policy must refuse and that get
// through are breaches; an At deleted or re-run against its promise, or a
// revoked author's Pod created, is wrong; the judge counts the rest.
func (h *harness) cotenant(ctx context.Context, r *run) error {
	stop := r.Sample(ctx, 2*time.Second)
	defer stop()
	if err := r.grant(ctx, cotenantUser, cotenantUser,
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "patch", "delete"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/status"}, Verbs: []string{"patch"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/eviction"}, Verbs: []string{"create"}},
	); err != nil {
		return err
	}
	if err := r.grant(ctx, authorUser, "chaos-at-author-ats",
		rbacv1.PolicyRule{APIGroups: []string{cnatv1beta1.GroupVersion.Group}, Resources: []string{"ats"}, Verbs: []string{"create"}},
	); err != nil {
		return err
	}
	if err := r.grant(ctx, authorUser, authorPods,
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}},
	); err != nil {
		return err
	}
	tenant, err := r.clientAs(ctx, cotenantUser)
	if err != nil {
		return err
	}
	author, err := r.clientAs(ctx, authorUser)
	if err != nil {
		return err
	}
	c := &cotenancy{r: r, tenant: tenant}

	n := max(h.size.ats, 2*len(cotenantGroups))
	// Time for the Ats, then the decoys and the revocation, before the
	// Ats' time.
	at := fireTime(n).Add(5*time.Second + time.Duration(n)*30*time.Millisecond)
	// The failover Ats fire once the others have: the controller is down
	// only for them.
	later := at.Add(25 * time.Second)
	if err := cluster.ForEach(ctx, n, 8, func(ctx context.Context, i int) error {
		return c.createAt(ctx, author, i, at, later)
	}); err != nil {
		return err
	}

	// The author's right to create Pods revoked.
	if err := h.cl.Client.Delete(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: authorPods}}); err != nil {
		return fmt.Errorf("revoking the author's right to create Pods: %w", err)
	}
	if _, err := r.awaitAdmission(ctx, author, nil, "the author refused Pods after the revocation", refusedBy(403, "cannot create resource")); err != nil {
		return err
	}

	// The decoys.
	var ats cnatv1beta1.AtList
	if err := h.cl.Client.List(ctx, &ats, client.InNamespace(r.Namespace)); err != nil {
		return err
	}
	var decoying sync.WaitGroup
	for i := range ats.Items {
		a := &ats.Items[i]
		if group := groupOf(a.Name); group == "decoy" || group == "claimed" {
			decoying.Go(func() { c.decoy(ctx, a, group == "claimed") })
		}
	}
	decoying.Wait()

	// The LimitRange, in force at the Ats' time.
	limits := &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: "chaos-cpu"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type:           corev1.LimitTypeContainer,
			Default:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(limitRangeCPU)},
			DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(limitRangeCPU)},
		}}},
	}
	if err := h.cl.Client.Create(ctx, limits); err != nil {
		return fmt.Errorf("creating the LimitRange: %w", err)
	}
	if err := r.awaitLimited(ctx, true); err != nil {
		return err
	}
	fmt.Printf("chaos cotenant: %d Ats, decoys and the LimitRange in place %s before the Ats' time\n", n, time.Until(at).Round(100*time.Millisecond))
	if time.Now().After(at) {
		return errors.New("the decoys and the LimitRange were not in place before the Ats' time: the scenario proves nothing")
	}

	// The running Pods attacked.
	var seen sync.Map
	var attacking sync.WaitGroup
	defer attacking.Wait()
	stopWatch, err := r.watchPods(ctx, func(pod *corev1.Pod, _ bool) {
		if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
			return
		}
		switch groupOf(pod.Labels[cnatv1beta1.LabelAt]) {
		case "relabel", "force", "image":
		default:
			return
		}
		if _, loaded := seen.LoadOrStore(pod.UID, true); !loaded {
			attacking.Go(func() { c.attackRunning(ctx, pod.DeepCopy()) })
		}
	})
	if err != nil {
		return err
	}
	defer stopWatch()

	// The LimitRange lifted 8 s after the Ats' time.
	if err := sleepUntil(ctx, at.Add(8*time.Second)); err != nil {
		return err
	}
	if err := h.cl.Client.Delete(ctx, limits); err != nil {
		return fmt.Errorf("deleting the LimitRange: %w", err)
	}
	if err := r.awaitLimited(ctx, false); err != nil {
		return err
	}
	// Every At whose name a decoy took says so by now.
	if err := sleepUntil(ctx, at.Add(12*time.Second)); err != nil {
		return err
	}
	if err := c.reportNameTaken(ctx); err != nil {
		return err
	}
	c.decoys.Range(func(name, _ any) bool {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: name.(string)}}
		if err := tenant.Delete(ctx, pod); err != nil && !apierrors.IsNotFound(err) {
			r.wrong("deleting decoy Pod %s: %v", pod.Name, err)
		}
		return true
	})

	if err := c.failover(ctx, later); err != nil {
		return err
	}
	err = r.settle(ctx)
	stopWatch()
	attacking.Wait()
	if err != nil {
		return err
	}
	c.report()
	if err := c.check(ctx); err != nil {
		return err
	}
	return c.deleteTemplated(ctx)
}

// deleteTemplated deletes the Ats with cnat's keys in their template kept
// for it, and waits (at most 30 s) until the garbage collector has deleted
// their Pods: from then on none may stay Terminating (runScenario's
// check).
func (c *cotenancy) deleteTemplated(ctx context.Context) error {
	r := c.r
	var names []string
	c.deleteAfter.Range(func(name, _ any) bool {
		names = append(names, name.(string))
		return true
	})
	for _, name := range names {
		a := &cnatv1beta1.At{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: name}}
		if err := r.h.cl.Client.Delete(ctx, a); err != nil && !apierrors.IsNotFound(err) {
			r.wrong("deleting At %s: %v", name, err)
		}
	}
	waiting := 0
	return poll.Until(ctx, 500*time.Millisecond, 30*time.Second, func(context.Context) (bool, error) {
		var pods corev1.PodList
		// Listed with ctx: a list cut short by the wait's timeout is no
		// answer.
		if err := r.h.cl.Client.List(ctx, &pods, client.InNamespace(r.Namespace)); err != nil {
			return false, nil // asked again
		}
		waiting = 0
		for _, p := range pods.Items {
			if slices.Contains(names, p.Labels[cnatv1beta1.LabelAt]) && p.DeletionTimestamp == nil {
				waiting++
			}
		}
		return waiting == 0, nil
	}, func() error {
		return fmt.Errorf("%d Pods of the deleted Ats not deleted by the garbage collector 30 s later", waiting)
	})
}

// groupOf is the cotenant group of an At's name, <group>-<i>.
func groupOf(name string) string {
	group, _, _ := strings.Cut(name, "-")
	return group
}

// indexOf is i of an At's name, <group>-<i>.
func indexOf(name string) int {
	_, i, _ := strings.Cut(name, "-")
	n, _ := strconv.Atoi(i)
	return n
}

// createAt creates At i of the cotenant scenario, due at at (or later, for
// failover); a refusal of one whose template carries cnat's keys is
// counted, and must name the key.
func (c *cotenancy) createAt(ctx context.Context, author client.Client, i int, at, later time.Time) error {
	group := cotenantGroups[i%len(cotenantGroups)]
	name := fmt.Sprintf("%s-%d", group, i)
	s := trial.AtSpec{At: at, Command: "echo cotenant", Duration: "2s"}
	var key string
	switch group {
	case "relabel", "image":
		s.Duration = "8s"
	case "released":
		key = cnatv1beta1.LabelReleased
		s.Labels = map[string]string{key: "true"}
	case "otherat":
		key = cnatv1beta1.LabelAt
		s.Labels = map[string]string{key: "someone-else"}
	case "force":
		s.Duration, s.BackoffLimit, s.Expect = "20s", 1, string(cnatv1beta1.PhaseFailed)
	case "revoked":
		// Refused for its author's rights until its deadline: Missed.
		s.Deadline = 20
		if err := c.r.createAs(ctx, author, name, s); err != nil {
			c.r.wrong("At %s, created by %s while it may create Pods: refused: %v", name, authorUser, err)
		}
		return nil
	case "limited":
		s.CPU, s.Deadline = limitedCPU, 60
	case "failover":
		s.At, s.Duration, s.BackoffLimit, s.Expect = later, "20s", 1, string(cnatv1beta1.PhaseFailed)
	}
	err := c.r.create(ctx, name, s)
	if key == "" {
		return err
	}
	var status apierrors.APIStatus
	switch {
	case err == nil:
		c.templates.Add(1)
		if (i/len(cotenantGroups))%2 == 1 {
			c.deleteAfter.Store(name, true)
		}
		return nil
	case !errors.As(err, &status) || ctx.Err() != nil:
		return err
	case strings.Contains(err.Error(), key):
		c.templatesRefused.Add(1)
	default:
		c.r.wrong("At %s, whose template carries %s: refused without naming the key: %v", name, key, err)
	}
	return nil
}

// claims are the labels by which a Pod claims to be an At's run.
func claims(at *cnatv1beta1.At) map[string]string {
	return map[string]string{
		cnatv1beta1.LabelAt:      at.Name,
		cnatv1beta1.LabelAtUID:   string(at.UID),
		cnatv1beta1.LabelAttempt: "1",
	}
}

// decoy creates, as the co-tenant, a Pod under the name of the At's first
// attempt: with no labels and a controller ownerReference of kind Decoy
// carrying the At's UID, whose claims and a status "Succeeded, exit 0" are
// then forged through pods/status; or, claimed, with cnat's claims and an
// owner of another kind in cnat's group. The decoy may be refused (by the
// policy cnat-pod-claims); admitted, the At must say PodNameTaken and run
// once the decoy is gone.
func (c *cotenancy) decoy(ctx context.Context, at *cnatv1beta1.At, claimed bool) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: at.Namespace, Name: fmt.Sprintf("%s-%s-1", at.Name, string(at.UID)[:8])},
		Spec:       cluster.SimulatedPodSpec("command"),
	}
	pod.Spec.NodeSelector = maps.Clone(pod.Spec.NodeSelector)
	pod.Spec.NodeSelector[nowhereLabel] = "true"
	owner := metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Decoy", Name: at.Name, UID: at.UID, Controller: ptr.To(true)}
	if claimed {
		owner.APIVersion, owner.Kind = cnatv1beta1.GroupVersion.String(), "Schedule"
		pod.Labels = claims(at)
	}
	pod.OwnerReferences = []metav1.OwnerReference{owner}
	if err := c.tenant.Create(ctx, pod); err != nil {
		c.decoysRefused.Add(1)
		fmt.Printf("chaos cotenant: decoy Pod %s (owner %s %s) refused: %v\n", pod.Name, owner.APIVersion, owner.Kind, err)
		return
	}
	c.decoys.Store(pod.Name, true)
	if claimed {
		return
	}
	labels := claims(at)
	now := time.Now().UTC().Format(time.RFC3339)
	forged := fmt.Sprintf(`{"metadata":{"labels":{%q:%q,%q:%q,%q:%q}},"status":{"phase":"Succeeded","containerStatuses":[{"name":"command","image":"busybox:1.37","imageID":"","ready":false,"restartCount":0,"state":{"terminated":{"exitCode":0,"reason":"Completed","startedAt":%q,"finishedAt":%q}}}]}}`,
		cnatv1beta1.LabelAt, labels[cnatv1beta1.LabelAt], cnatv1beta1.LabelAtUID, labels[cnatv1beta1.LabelAtUID],
		cnatv1beta1.LabelAttempt, labels[cnatv1beta1.LabelAttempt], now, now)
	err := c.tenant.Status().Patch(ctx, pod, client.RawPatch(types.MergePatchType, []byte(forged)))
	c.attack(fmt.Sprintf("forging the claims and a Succeeded status of decoy Pod %s through pods/status", pod.Name), err)
}

// attack counts one write the policy cnat-pod-claims must refuse; one it
// does not refuse is a breach.
func (c *cotenancy) attack(what string, err error) {
	c.attacks.Add(1)
	switch {
	case err == nil:
		c.r.breach("%s: admitted", what)
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), podClaimsRefusal):
		c.refused.Add(1)
	default:
		c.r.breach("%s: not refused by the policy cnat-pod-claims: %v", what, err)
	}
}

// attackRunning attacks a running Pod of cnat's as its At's group says:
// relabel (released, or its claims removed, through pods/status), force
// (deleted with grace period 0), image (its image changed).
func (c *cotenancy) attackRunning(ctx context.Context, pod *corev1.Pod) {
	name := pod.Labels[cnatv1beta1.LabelAt]
	target := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}}
	switch groupOf(name) {
	case "relabel":
		what, patch := "labelling it released", fmt.Sprintf(`{"metadata":{"labels":{%q:"true"}}}`, cnatv1beta1.LabelReleased)
		if (indexOf(name)/len(cotenantGroups))%2 == 1 {
			what, patch = "removing its claims", fmt.Sprintf(`{"metadata":{"labels":{%q:null,%q:null}}}`, cnatv1beta1.LabelAt, cnatv1beta1.LabelAtUID)
		}
		err := c.tenant.Status().Patch(ctx, target, client.RawPatch(types.MergePatchType, []byte(patch)))
		c.attack(fmt.Sprintf("%s through pods/status of running Pod %s", what, pod.Name), err)
	case "force":
		if err := c.tenant.Delete(ctx, pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &pod.UID}); err != nil {
			c.r.wrong("deleting running Pod %s with grace period 0: %v", pod.Name, err)
			return
		}
		c.forced.Add(1)
	case "image":
		image := pod.Spec.Containers[0].Image
		if !strings.Contains(image, "/") {
			image = "docker.io/library/" + image
		}
		patch := fmt.Sprintf(`[{"op":"replace","path":"/spec/containers/0/image","value":%q}]`, image)
		err := c.tenant.Patch(ctx, target, client.RawPatch(types.JSONPatchType, []byte(patch)))
		if err == nil {
			c.imagesPatched.Add(1)
		}
		c.attack(fmt.Sprintf("changing the image of running Pod %s to %s", pod.Name, image), err)
	}
}

// awaitLimited waits until a Pod with the limited Ats' CPU request is
// refused (limited) or admitted (not): the LimitRange in force or gone.
func (r *run) awaitLimited(ctx context.Context, limited bool) error {
	probe := r.probePod(nil)
	probe.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(limitedCPU)}
	var answer error
	return poll.Until(ctx, 100*time.Millisecond, time.Minute, func(context.Context) (bool, error) {
		answer = r.h.cl.Client.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		return (answer != nil) == limited, nil
	}, func() error {
		return fmt.Errorf("a Pod requesting %s CPU refused by the LimitRange: %t after a minute, not %t (%w)", limitedCPU, answer != nil, limited, answer)
	})
}

// reportNameTaken says how many Ats whose name a decoy took say
// PodNameTaken, 12 s after their time.
func (c *cotenancy) reportNameTaken(ctx context.Context) error {
	var ats cnatv1beta1.AtList
	if err := c.r.h.cl.Client.List(ctx, &ats, client.InNamespace(c.r.Namespace)); err != nil {
		return err
	}
	decoyed, taken := 0, 0
	reasons := map[string]int{}
	for _, a := range ats.Items {
		if _, ok := c.decoys.Load(fmt.Sprintf("%s-%s-1", a.Name, string(a.UID)[:8])); !ok {
			continue
		}
		decoyed++
		reasons[fmt.Sprintf("%s/%s", a.Status.Phase, a.Status.Reason)]++
		if a.Status.Reason == cnatv1beta1.ReasonPodNameTaken {
			taken++
		}
	}
	fmt.Printf("chaos cotenant: %d of %d Ats whose Pod name a decoy took say PodNameTaken 12 s after their time (%v); the decoys deleted\n", taken, decoyed, reasons)
	return nil
}

// failover waits until the failover Ats' Pods run, SIGKILLs the
// controller, deletes the Pods gracefully as the co-tenant, waits (at most
// 30 s) until their kubelet has stopped them and deleted them at once, and
// starts the controller again: it learns of the deletions only from the
// Pods as they are then.
func (c *cotenancy) failover(ctx context.Context, later time.Time) error {
	r := c.r
	if err := sleepUntil(ctx, later); err != nil {
		return err
	}
	want := 0
	for i := range max(r.h.size.ats, 2*len(cotenantGroups)) {
		if cotenantGroups[i%len(cotenantGroups)] == "failover" {
			want++
		}
	}
	var pods []corev1.Pod
	list := func(context.Context) (bool, error) {
		var l corev1.PodList
		// Listed with ctx: a list cut short by a wait's timeout is no
		// answer.
		if err := r.h.cl.Client.List(ctx, &l, client.InNamespace(r.Namespace)); err != nil {
			return false, err
		}
		pods = slices.DeleteFunc(l.Items, func(p corev1.Pod) bool { return groupOf(p.Labels[cnatv1beta1.LabelAt]) != "failover" })
		running := 0
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running >= want, nil
	}
	if err := poll.Until(ctx, 200*time.Millisecond, 30*time.Second, list, func() error {
		return fmt.Errorf("the %d failover Pods did not all run within 30 s", want)
	}); err != nil {
		return err
	}
	rep := r.h.replicas[0]
	if err := rep.Kill(); err != nil {
		return err
	}
	deleted, err := deleteUntilKubeletDone(ctx, c.tenant, pods, list, func() []corev1.Pod { return pods })
	if err != nil {
		return fmt.Errorf("as %s: %w", cotenantUser, err)
	}
	fmt.Printf("chaos cotenant: controller SIGKILLed; %d running Pods deleted gracefully, stopped and deleted again by their kubelet; controller started\n", deleted)
	return rep.start(ctx, false)
}

// report prints what the co-tenant did and what was let through.
func (c *cotenancy) report() {
	decoys := 0
	c.decoys.Range(func(_, _ any) bool { decoys++; return true })
	fmt.Printf("chaos cotenant: decoy Pods admitted %d, refused %d\n", decoys, c.decoysRefused.Load())
	fmt.Printf("chaos cotenant: %d of %d writes through pods/status and Pod image changes refused by the policy cnat-pod-claims (%d images changed)\n",
		c.refused.Load(), c.attacks.Load(), c.imagesPatched.Load())
	fmt.Printf("chaos cotenant: Ats with cnat's keys in their template: %d admitted, %d refused naming the key\n", c.templates.Load(), c.templatesRefused.Load())
	fmt.Printf("chaos cotenant: %d running Pods deleted with grace period 0\n", c.forced.Load())
}

// check reads the Ats once they are finished: the forced and failover
// ones must have ended Failed (PodDeleted) after one attempt, the revoked
// author's must have no Pod (revokedRan counts those that did), a changed
// image that restarted the command must not end Succeeded.
func (c *cotenancy) check(ctx context.Context) error {
	r := c.r
	var ats cnatv1beta1.AtList
	if err := r.h.cl.Client.List(ctx, &ats, client.InNamespace(r.Namespace)); err != nil {
		return err
	}
	var pods corev1.PodList
	if err := r.h.cl.Client.List(ctx, &pods, client.InNamespace(r.Namespace)); err != nil {
		return err
	}
	revoked, revokedRan := 0, 0
	images := map[string]int{}
	for _, a := range ats.Items {
		st := a.Status
		outcome := fmt.Sprintf("%s (%s) after %d attempts", st.Phase, st.Reason, st.Attempts)
		switch groupOf(a.Name) {
		case "force", "failover":
			if st.Phase != cnatv1beta1.PhaseFailed || st.Reason != cnatv1beta1.ReasonPodDeleted || st.Attempts != 1 {
				r.wrong("At %s, whose running Pod was deleted: %s, not Failed (PodDeleted) after 1", a.Name, outcome)
			}
		case "revoked":
			revoked++
			if st.Attempts > 0 || st.PodName != "" {
				revokedRan++
				r.wrong("At %s, whose author may no longer create Pods: its Pod was created: %s", a.Name, outcome)
			}
		case "image":
			restarts := int32(0)
			for _, p := range pods.Items {
				if p.Name == st.PodName {
					for _, s := range p.Status.ContainerStatuses {
						restarts += s.RestartCount
					}
				}
			}
			images[fmt.Sprintf("%s, restarts %d", outcome, restarts)]++
			if restarts > 0 && st.Phase == cnatv1beta1.PhaseSucceeded {
				r.wrong("At %s, whose Pod's image was changed: Succeeded although its command restarted %d times", a.Name, restarts)
			}
		}
	}
	fmt.Printf("chaos cotenant: Ats with their image changed ended %v\n", images)
	fmt.Printf("chaos cotenant: revokedRan=%d of %d Ats whose author's right to create Pods was revoked before their time\n", revokedRan, revoked)
	return nil
}
