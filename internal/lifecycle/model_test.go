package lifecycle_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/atpod"
	"github.com/programming-kubernetes/cnat/internal/lifecycle"
)

// The model-based test plays an API server, a kubelet, users, a janitor
// and a crashing controller against Decide, in random order, and checks
// after every step the invariants cnat promises, from the model API
// server's records alone (every Pod ever created, every status ever
// stored), never from what the controller believes:
//
//   - never two Pods for one attempt of one At incarnation;
//   - never a new attempt while an earlier one's Pod may still run;
//   - never more attempts than backoffLimit+1 allowed, not counting those
//     disrupted before their command started;
//   - never Succeeded unless a Pod of the At's own exited 0 on its own,
//     neither deleted nor disrupted while it ran;
//   - a terminal phase never changes;
//   - a Pod leaves the API server only once the status of its At records
//     its attempt's outcome, or once its At is gone;
//   - no Pod of another incarnation, or not cnat's, is adopted, changed
//     or reported;
//   - a reported outcome is that of a Pod of the At's own;
//   - the controller deletes an At only once it finished and its
//     ttlSecondsAfterFinished has passed since its completionTime.
//
// The controller is lifecycle.Reconcile itself, the code the controller
// runs, over the model API server: it decides on a cache that may lag any
// number of steps behind, confirms with fresh reads when Decide asks (the
// At, and the Pods only when the decision rests on one's absence), and
// carries the decision out in its order (create, status, release,
// delete); it may crash between any two of those writes or have one
// refused.

// modelWorld is the model API server and the history it keeps.
type modelWorld struct {
	g   Gomega
	rnd *rand.Rand
	now time.Time

	at   *cnatv1beta1.At // nil: no At of that name
	rv   int             // resourceVersion of at
	pods map[string]*corev1.Pod

	// cache is what the controller's informers show: a snapshot taken at
	// some earlier step, of the Pods not yet released (the controller's Pod
	// cache selects on the released label's absence).
	cacheAt   *cnatv1beta1.At
	cachePods []corev1.Pod

	uids     int
	limits   map[types.UID]int32             // the highest backoffLimit each incarnation had
	created  map[types.UID]map[int32]int     // Pods created, by incarnation and attempt
	made     map[string]types.UID            // the incarnation each Pod the controller created was made for, by name
	terminal map[types.UID]cnatv1beta1.Phase // the first terminal phase each incarnation reached
	gone     map[types.UID]bool              // incarnations deleted
	// killed is, by incarnation, the first attempt whose Pod was deleted by
	// someone before it finished: no later attempt may start.
	killed map[types.UID]int32
	// unstarted are, by incarnation, the attempts whose Pod was disrupted
	// before its command started: they do not count against backoffLimit.
	unstarted map[types.UID]map[int32]bool
	// clean are, by incarnation, the attempts whose command exited 0 on its
	// own: neither deleted nor disrupted while it ran.
	clean map[types.UID]map[int32]bool
	// broken lists the invariants the controller broke while it wrote, for
	// check to report with the history.
	broken    []string
	steps     int
	creations int
	// faults turns crashes, refused writes and refused Pods on.
	faults bool
	// foreign are the Pods co-tenants made, as they made them.
	foreign map[string]*corev1.Pod
	opts    atpod.PodOptions
}

const (
	modelNamespace = "model"
	modelName      = "job"
)

var modelStart = time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)

func newModelWorld(g Gomega, seed uint64) *modelWorld {
	w := &modelWorld{
		g:         g,
		rnd:       rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		now:       modelStart,
		pods:      map[string]*corev1.Pod{},
		limits:    map[types.UID]int32{},
		created:   map[types.UID]map[int32]int{},
		made:      map[string]types.UID{},
		terminal:  map[types.UID]cnatv1beta1.Phase{},
		gone:      map[types.UID]bool{},
		killed:    map[types.UID]int32{},
		unstarted: map[types.UID]map[int32]bool{},
		clean:     map[types.UID]map[int32]bool{},
		opts:      atpod.PodOptions{DefaultImage: "busybox"},
		faults:    true,
		foreign:   map[string]*corev1.Pod{},
	}
	w.createAt()
	w.refreshCache()
	return w
}

func (w *modelWorld) createAt() {
	w.uids++
	uid := types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012d", w.uids*2654435761%0xffffffff, w.uids))
	spec := cnatv1beta1.AtSpec{
		Schedule: modelStart.Add(time.Duration(w.rnd.IntN(60)) * time.Second).Format(time.RFC3339),
		Command:  fmt.Sprintf("echo run-%d", w.uids),
	}
	if w.rnd.IntN(2) == 0 {
		spec.BackoffLimit = ptr.To(int32(w.rnd.IntN(4)))
	}
	if w.rnd.IntN(4) == 0 {
		spec.StartingDeadlineSeconds = ptr.To(int64(w.rnd.IntN(120)))
	}
	if w.rnd.IntN(4) == 0 {
		spec.TTLSecondsAfterFinished = ptr.To(int32(w.rnd.IntN(60)))
	}
	w.at = &cnatv1beta1.At{
		ObjectMeta: metav1.ObjectMeta{Name: modelName, Namespace: modelNamespace, UID: uid, Generation: 1},
		Spec:       spec,
	}
	w.bump()
	w.limits[uid] = ptr.Deref(spec.BackoffLimit, 0)
}

func (w *modelWorld) bump() {
	w.rv++
	w.at.ResourceVersion = fmt.Sprint(w.rv)
}

func (w *modelWorld) refreshCache() {
	w.cacheAt = nil
	if w.at != nil {
		w.cacheAt = w.at.DeepCopy()
	}
	w.cachePods = slices.DeleteFunc(w.listPods(), func(p corev1.Pod) bool {
		_, released := p.Labels[cnatv1beta1.LabelReleased]
		return released
	})
}

func (w *modelWorld) listPods() []corev1.Pod {
	out := make([]corev1.Pod, 0, len(w.pods))
	for _, p := range w.pods {
		out = append(out, *p.DeepCopy())
	}
	return out
}

// reconcile is one run of the controller: lifecycle.Reconcile, the code the
// controller runs, over the model API server (modelEffects). It decides on
// the cache, confirms when asked, then creates, writes status, releases and
// deletes in Reconcile's order, stopping after a crash or a refused write.
func (w *modelWorld) reconcile() {
	res, err := lifecycle.Reconcile(modelEffects{w}, w.now)
	if err == nil {
		w.checkNotSilent(res)
	}
}

// checkNotSilent is the never-silent invariant, after a reconcile that
// returned no error (an error is retried within 30 s by the controller's
// rate limiter): a due At that has not finished either says on its status
// why no Pod of its own runs — a refusal, a retry, a suspension, or a Pod
// the controller made for it that the status names — or is looked at again
// within lifecycle.MaxSilence.
func (w *modelWorld) checkNotSilent(res lifecycle.Result) {
	at := w.at
	if at == nil || at.Status.Phase.Finished() || ptr.Deref(at.Spec.Suspend, false) {
		return
	}
	scheduled, invalid := lifecycle.ScheduledTime(&at.Spec)
	if invalid != nil || w.now.Before(scheduled) {
		return
	}
	if !res.Until.IsZero() && !res.Until.After(w.now.Add(lifecycle.MaxSilence)) {
		return
	}
	st := at.Status
	switch st.Reason {
	case "", cnatv1beta1.ReasonScheduled:
	case cnatv1beta1.ReasonRunning, cnatv1beta1.ReasonPodPending, cnatv1beta1.ReasonPodStopping:
		if p := w.pods[st.PodName]; p != nil && w.made[st.PodName] == at.UID {
			return
		}
	default:
		return
	}
	w.broken = append(w.broken, fmt.Sprintf("At %s is due but silent after a reconcile: status %s/%s %q names no Pod of its own, and no look within %s is set",
		at.UID, st.Phase, st.Reason, st.Message, lifecycle.MaxSilence))
}

// errCrash is a controller that stopped between two writes; errConflict a
// status write refused because the At changed since it was read.
var (
	errCrash    = errors.New("crashed")
	errConflict = errors.New("conflict")
)

// modelEffects are lifecycle.Effects over the model API server: the cache is
// a snapshot of some earlier step, and any write may crash the controller
// or, with faults on, be refused.
type modelEffects struct{ w *modelWorld }

func (e modelEffects) crash() bool { return e.w.faults && e.w.rnd.IntN(8) == 0 }

func (e modelEffects) CachedAt() (*cnatv1beta1.At, error) {
	if e.w.cacheAt == nil {
		return nil, nil
	}
	return e.w.cacheAt.DeepCopy(), nil
}

func (e modelEffects) CachedPods() ([]corev1.Pod, error) { return e.w.cachePods, nil }

func (e modelEffects) FreshAt(*cnatv1beta1.At, lifecycle.Decision) (*cnatv1beta1.At, error) {
	if e.w.at == nil {
		return nil, nil
	}
	return e.w.at.DeepCopy(), nil
}

func (e modelEffects) FreshPods() ([]corev1.Pod, error) { return e.w.listPods(), nil }

func (e modelEffects) CreatePod(at *cnatv1beta1.At, d lifecycle.Decision) (*lifecycle.Refusal, error) {
	w := e.w
	pod := atpod.NewPod(at, d.Attempt, d.ScheduledTime, w.opts)
	switch existing := w.pods[pod.Name]; {
	case w.faults && w.rnd.IntN(10) == 0:
		return &lifecycle.Refusal{Reason: cnatv1beta1.ReasonPodForbidden, Err: errors.New("forbidden by a quota")}, nil
	case existing != nil:
		// The API server answers AlreadyExists; the controller reads the Pod
		// and judges it (createPod).
		if _, err := atpod.RunOf(existing, at); err != nil {
			return &lifecycle.Refusal{Reason: cnatv1beta1.ReasonPodNameTaken, Err: err}, nil
		}
		return nil, nil // the At's own Pod, created by an earlier run
	}
	if w.at == nil || w.at.UID != at.UID {
		// The API server's garbage collector would delete a Pod whose owner
		// is gone; the model creates it with a deletion timestamp.
		pod.DeletionTimestamp = ptr.To(metav1.NewTime(w.now))
	}
	for _, other := range w.pods {
		if podIncarnation(other) == at.UID && mayRun(other) {
			w.broken = append(w.broken, fmt.Sprintf("Pod %s of attempt %d created while Pod %s may still run",
				pod.Name, d.Attempt, other.Name))
		}
	}
	pod.CreationTimestamp = metav1.NewTime(w.now)
	pod.UID = types.UID(fmt.Sprintf("pod-%d", w.creations))
	w.creations++
	w.pods[pod.Name] = pod
	if w.created[at.UID] == nil {
		w.created[at.UID] = map[int32]int{}
	}
	w.created[at.UID][d.Attempt]++
	w.made[pod.Name] = at.UID
	return nil, nil
}

func (e modelEffects) WriteStatus(at *cnatv1beta1.At, status *cnatv1beta1.AtStatus) error {
	w := e.w
	if w.at == nil || w.at.UID != at.UID || w.at.ResourceVersion != at.ResourceVersion {
		return errConflict
	}
	if e.crash() {
		return errCrash
	}
	w.at.Status = *status.DeepCopy()
	w.bump()
	return nil
}

func (e modelEffects) Release(p *corev1.Pod) error {
	w := e.w
	if e.crash() {
		return errCrash
	}
	live := w.pods[p.Name]
	if live == nil || live.UID != p.UID {
		return nil
	}
	w.checkRelease(live)
	live.Finalizers = nil
	if live.Labels == nil {
		live.Labels = map[string]string{}
	}
	live.Labels[cnatv1beta1.LabelReleased] = "true"
	if live.DeletionTimestamp != nil {
		w.podLeaves(live)
	}
	return nil
}

func (e modelEffects) DeleteAt(at *cnatv1beta1.At) error {
	w := e.w
	if w.at != nil && w.at.UID == at.UID {
		// Only an At that finished and whose ttlSecondsAfterFinished has
		// passed since is the controller's to delete.
		st, ttl := w.at.Status, w.at.Spec.TTLSecondsAfterFinished
		if !st.Phase.Finished() || ttl == nil || st.CompletionTime == nil || w.now.Before(st.CompletionTime.Add(time.Duration(*ttl)*time.Second)) {
			w.broken = append(w.broken, fmt.Sprintf("At %s deleted by the controller in phase %s, completionTime %v, ttlSecondsAfterFinished %v",
				at.UID, st.Phase, st.CompletionTime, ptr.Deref(ttl, -1)))
		}
		w.deleteAt(false)
	}
	return nil
}

// checkRelease records a Pod's finalizer going before its outcome is
// recorded.
func (w *modelWorld) checkRelease(pod *corev1.Pod) {
	uid := podIncarnation(pod)
	if w.at == nil || w.at.UID != uid {
		return // its At is gone: nobody to record for
	}
	attempt := podAttempt(pod)
	st := w.at.Status
	if st.Attempts < attempt || (st.Attempts == attempt && !st.Phase.Finished()) {
		w.broken = append(w.broken, fmt.Sprintf("Pod %s released while the At's status (attempts %d, phase %s) does not record its outcome",
			pod.Name, st.Attempts, st.Phase))
	}
}

// hasDisruptionTarget reports whether the Pod has the DisruptionTarget condition.
func hasDisruptionTarget(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget {
			return true
		}
	}
	return false
}

// podLeaves removes a Pod from the model API server, and records it as
// broken if the Pod is the current At's own and its outcome is not recorded
// yet: whatever removed it (a release, a deletion of a Pod already
// released), the run's books must be kept first.
func (w *modelWorld) podLeaves(p *corev1.Pod) {
	if w.at != nil && p.UID != "foreign" && podIncarnation(p) == w.at.UID {
		st, attempt := w.at.Status, podAttempt(p)
		if st.Attempts < attempt || (st.Attempts == attempt && !st.Phase.Finished()) {
			w.broken = append(w.broken, fmt.Sprintf("Pod %s left the API server while the At's status (attempts %d, phase %s) does not record its outcome",
				p.Name, st.Attempts, st.Phase))
		}
	}
	delete(w.pods, p.Name)
}

func podIncarnation(pod *corev1.Pod) types.UID {
	if ref := metav1.GetControllerOf(pod); ref != nil {
		return ref.UID
	}
	return types.UID(pod.Labels[cnatv1beta1.LabelAtUID])
}

func podAttempt(pod *corev1.Pod) int32 {
	var n int32
	_, _ = fmt.Sscan(pod.Labels[cnatv1beta1.LabelAttempt], &n)
	return n
}

// deleteAt deletes the At, its Pods deleted by the garbage collector or,
// with orphan, left without owner.
func (w *modelWorld) deleteAt(orphan bool) {
	uid := w.at.UID
	w.gone[uid] = true
	w.at = nil
	for _, p := range w.pods {
		if podIncarnation(p) != uid {
			continue
		}
		if orphan {
			p.OwnerReferences = nil
			if p.UID == "foreign" {
				w.foreign[p.Name] = p.DeepCopy() // changed by the garbage collector
			}
			continue
		}
		w.deletePod(p)
	}
}

// deletePod deletes a Pod as the API server does: at once when it is
// finished or not scheduled, else with its termination grace period; a Pod
// with finalizers stays, with its deletion timestamp, until they are gone.
func (w *modelWorld) deletePod(p *corev1.Pod) {
	if p.DeletionTimestamp != nil {
		return
	}
	if len(p.Finalizers) == 0 {
		w.podLeaves(p)
		return
	}
	grace := int64(30)
	if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		grace = 0
	}
	p.DeletionTimestamp = ptr.To(metav1.NewTime(w.now.Add(time.Duration(grace) * time.Second)))
	p.DeletionGracePeriodSeconds = ptr.To(grace)
}

// mayRun reports whether a Pod's command may run now or later: it has not
// finished, and it is not a deleted Pod no node will ever start.
func mayRun(p *corev1.Pod) bool {
	finished := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	return !finished && (p.DeletionTimestamp == nil || p.Spec.NodeName != "")
}

// mark records a fact about an attempt of an incarnation.
func mark(m map[types.UID]map[int32]bool, p *corev1.Pod) {
	uid := podIncarnation(p)
	if m[uid] == nil {
		m[uid] = map[int32]bool{}
	}
	m[uid][podAttempt(p)] = true
}

// disrupt plays an eviction, a preemption or a drain: the DisruptionTarget
// condition, then a deletion. A Pod no node has started is marked as
// disrupted before its command started.
func (w *modelWorld) disrupt(p *corev1.Pod, reason string) {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || p.DeletionTimestamp != nil {
		return
	}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: reason})
	if p.Status.Phase != corev1.PodRunning {
		mark(w.unstarted, p)
	}
	w.deletePod(p)
}

// randomPod is one of the Pods, or nil.
func (w *modelWorld) randomPod() *corev1.Pod {
	if len(w.pods) == 0 {
		return nil
	}
	names := make([]string, 0, len(w.pods))
	for n := range w.pods {
		names = append(names, n)
	}
	// Map order is random, and not w.rnd's: sorted, a seed replays a history.
	slices.Sort(names)
	return w.pods[names[w.rnd.IntN(len(names))]]
}

// step is one random event.
func (w *modelWorld) step() string {
	w.steps++
	switch n := w.rnd.IntN(100); {
	case n < 30:
		w.reconcile()
		return "reconcile"
	case n < 40:
		w.refreshCache()
		return "cache catches up"
	case n < 45:
		w.refreshCache() // a restarted controller starts with a fresh cache
		w.reconcile()
		return "controller restarted"
	case n < 55:
		w.now = w.now.Add(time.Duration(w.rnd.IntN(30000)) * time.Millisecond)
		return "time passes"
	case n < 75:
		return w.kubelet()
	case n < 82:
		if p := w.randomPod(); p != nil {
			uid := podIncarnation(p)
			if finished := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed; !finished && p.DeletionTimestamp == nil && w.killed[uid] == 0 {
				w.killed[uid] = podAttempt(p)
			}
			w.deletePod(p)
			return "Pod deleted"
		}
	case n < 84:
		if p := w.randomPod(); p != nil && p.UID != "foreign" {
			w.disrupt(p, []string{"EvictionByEvictionAPI", "PreemptionByScheduler", "DeletionByTaintManager"}[w.rnd.IntN(3)])
			return "Pod disrupted"
		}
	case n < 85:
		// The node of a Pod being deleted is gone: PodGC marks the Pod
		// Failed, whatever its kubelet last said.
		if p := w.randomPod(); p != nil && p.UID != "foreign" && p.DeletionTimestamp != nil && p.Spec.NodeName != "" && mayRun(p) {
			p.Status.Phase = corev1.PodFailed
			p.Status.Conditions = append(slices.DeleteFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.DisruptionTarget }),
				corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByPodGC"})
			return "Pod's node deleted: PodGC marks it Failed"
		}
	case n < 86:
		if w.at != nil {
			w.at.Spec.Suspend = ptr.To(!ptr.Deref(w.at.Spec.Suspend, false))
			w.at.Generation++
			w.bump()
			return "suspend toggled"
		}
	case n < 89:
		if w.at != nil {
			w.deleteAt(w.rnd.IntN(2) == 0)
			return "At deleted"
		}
		w.createAt()
		return "At created again"
	case n < 91:
		if w.at == nil {
			w.createAt()
			return "At created again"
		}
	case n < 92:
		// Someone else's Pod with the name the next attempt would have.
		if w.at != nil {
			name := atpod.PodName(w.at, w.at.Status.Attempts+1)
			if w.pods[name] == nil {
				pod, shape := w.foreignPod(name, w.at.Status.Attempts+1)
				w.pods[name] = pod
				w.foreign[name] = pod.DeepCopy()
				return "foreign Pod created: " + shape
			}
		}
	default:
		w.reconcile()
		return "reconcile"
	}
	return "nothing"
}

// foreignPod is a Pod a co-tenant made under the name of the At's next
// attempt, in one of the shapes a user with create pods and patch
// pods/status can give it where the Pod-claim policy is missing: the
// controller must neither count nor change any of them.
func (w *modelWorld) foreignPod(name string, attempt int32) (*corev1.Pod, string) {
	claims := map[string]string{
		cnatv1beta1.LabelAt: modelName, cnatv1beta1.LabelAtUID: string(w.at.UID), cnatv1beta1.LabelAttempt: fmt.Sprint(attempt),
	}
	owner := func(apiVersion, kind string, uid types.UID) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: modelName, UID: uid, Controller: ptr.To(true)}}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: modelNamespace, UID: "foreign"}}
	shapes := []string{"the At's name label, no owner", "a decoy owner with the At's UID", "the claims, owned by another incarnation",
		"the claims, a decoy owner with the At's UID, a forged Succeeded", "the claims, an At of another group",
		"the claims, another kind of cnat's group with the At's UID", "the At's owner reference, no claim labels",
		"the At's owner reference, the labels of another incarnation"}
	shape := w.rnd.IntN(len(shapes))
	switch shape {
	case 0:
		pod.Labels = map[string]string{cnatv1beta1.LabelAt: modelName}
	case 1:
		pod.OwnerReferences = owner("example.com/v1", "Decoy", w.at.UID)
	case 2:
		pod.Labels = claims
		pod.OwnerReferences = owner(cnatv1beta1.GroupVersion.String(), "At", "an-earlier-incarnation")
	case 3:
		pod.Labels = claims
		pod.OwnerReferences = owner("example.com/v1", "Decoy", w.at.UID)
	case 4:
		pod.Labels = claims
		pod.OwnerReferences = owner("cnat.example.com/v1beta1", "At", w.at.UID)
	case 5:
		pod.Labels = claims
		pod.OwnerReferences = owner(cnatv1beta1.GroupVersion.String(), "Decoy", w.at.UID)
	case 6:
		pod.Labels = map[string]string{cnatv1beta1.LabelAt: modelName}
		pod.OwnerReferences = owner(cnatv1beta1.GroupVersion.String(), "At", w.at.UID)
	case 7:
		pod.Labels = map[string]string{cnatv1beta1.LabelAt: modelName, cnatv1beta1.LabelAtUID: "an-earlier-incarnation", cnatv1beta1.LabelAttempt: fmt.Sprint(attempt)}
		pod.OwnerReferences = owner(cnatv1beta1.GroupVersion.String(), "At", w.at.UID)
	}
	if shape >= 2 {
		// Its status forged through pods/status: a run that exited 0.
		pod.Spec = corev1.PodSpec{NodeName: "node", Containers: []corev1.Container{{Name: atpod.CommandContainerName}}}
		pod.Status = corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{
			Name: atpod.CommandContainerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}},
		}}}
	}
	return pod, shapes[shape]
}

// kubelet moves one Pod along: scheduled and running, finished, killed
// because it was deleted, or failed without any container finishing.
func (w *modelWorld) kubelet() string {
	p := w.randomPod()
	if p == nil || p.UID == "foreign" {
		return "nothing"
	}
	at := metav1.NewTime(w.now)
	terminated := func(code int32) {
		phase := corev1.PodSucceeded
		if code != 0 {
			phase = corev1.PodFailed
		}
		p.Status = corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{
			Name:  p.Spec.Containers[0].Name,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, StartedAt: at, FinishedAt: at}},
		}}}
	}
	switch p.Status.Phase {
	case "", corev1.PodPending:
		switch {
		case p.DeletionTimestamp != nil && p.Spec.NodeName != "":
			// Stopped before any container started: the kubelet's last word
			// has no container that ever ran.
			p.Status.Phase = corev1.PodFailed
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{
				Name: p.Spec.Containers[0].Name,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 137, Reason: "ContainerStatusUnknown", FinishedAt: at,
				}},
			}}
			return "deleted Pod stopped before it ran"
		case p.DeletionTimestamp != nil:
			return "nothing"
		case w.rnd.IntN(6) == 0:
			p.Spec.NodeName = "node"
			p.Status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: "OutOfcpu"}
			return "Pod rejected by the kubelet"
		case w.rnd.IntN(6) == 0:
			p.Spec.NodeName = "node"
			p.Status = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
				Name: p.Spec.Containers[0].Name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull"}},
			}}}
			return "Pod cannot pull its image"
		}
		p.Spec.NodeName = "node"
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: p.Status.Conditions}
		return "Pod runs"
	case corev1.PodRunning:
		conditions := p.Status.Conditions
		switch {
		case p.DeletionTimestamp != nil && w.rnd.IntN(2) == 0:
			terminated(137)
			p.Status.Conditions = conditions
			return "deleted Pod killed"
		case p.DeletionTimestamp != nil:
			// A command that handles SIGTERM and exits 0: still interrupted.
			terminated(0)
			p.Status.Conditions = conditions
			return "deleted Pod exited 0 on SIGTERM"
		case w.rnd.IntN(8) == 0:
			terminated(137)
			p.Status.Reason = "Evicted"
			p.Status.Conditions = append(conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "TerminationByKubelet"})
			return "Pod evicted by the kubelet"
		}
		code := int32(w.rnd.IntN(2) * (1 + w.rnd.IntN(3)))
		terminated(code)
		p.Status.Conditions = conditions
		if code == 0 && !hasDisruptionTarget(p) {
			mark(w.clean, p)
		}
		return "Pod finished"
	}
	return "nothing"
}

// check returns the invariants broken, judged on the model API server's
// records; none is the nil slice, so that a step that breaks nothing
// allocates nothing.
func (w *modelWorld) check() []string {
	broken := w.broken
	fail := func(format string, args ...any) {
		broken = append(broken, fmt.Sprintf(format, args...))
	}
	for uid, attempts := range w.created {
		counted := int32(0)
		for attempt, n := range attempts {
			if n > 1 {
				fail("attempt %d of %s has %d Pods", attempt, uid, n)
			}
			if !w.unstarted[uid][attempt] {
				counted++
			}
			if k := w.killed[uid]; k > 0 && attempt > k {
				fail("attempt %d of %s started after the Pod of attempt %d was deleted before it finished", attempt, uid, k)
			}
		}
		if counted > w.limits[uid]+1 {
			fail("%d attempts of %s count against backoffLimit %d", counted, uid, w.limits[uid])
		}
	}
	if w.at == nil {
		return broken
	}
	uid, st := w.at.UID, w.at.Status
	if first, ok := w.terminal[uid]; ok && st.Phase != first {
		fail("terminal phase %s of %s changed to %s", first, uid, st.Phase)
	}
	if st.Phase.Finished() {
		w.terminal[uid] = st.Phase
	}
	if st.PodName != "" && w.made[st.PodName] != uid {
		fail("status reports Pod %s, which the controller did not make for incarnation %s", st.PodName, uid)
	}
	if st.Phase == cnatv1beta1.PhaseSucceeded && !w.clean[uid][st.Attempts] {
		fail("Succeeded though no Pod of attempt %d of %s exited 0 on its own", st.Attempts, uid)
	}
	for name, p := range w.pods {
		if orig := w.foreign[name]; p.UID == "foreign" && orig != nil && !equality.Semantic.DeepEqual(p.ObjectMeta, orig.ObjectMeta) {
			fail("someone else's Pod %s was changed", p.Name)
		}
	}
	return broken
}

// expectIntact fails the test with the broken invariants and the history
// that broke them. It runs after every step: the history is formatted only
// on failure.
func (w *modelWorld) expectIntact(history []string) {
	w.g.Expect(w.check()).To(BeEmpty(), func() string {
		return fmt.Sprintf("step %d: invariants broken\nhistory (last 30):\n  %s", w.steps, strings.Join(last(history, 30), "\n  "))
	})
}

func last(s []string, n int) []string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// settle lets the controller and the kubelet run without interference
// until nothing changes: every live At must end up finished (or held by
// its suspension, or waiting for a retry the test does not wait out), and
// no Pod of a gone At may keep its finalizer.
func (w *modelWorld) settle(history []string) {
	if w.at != nil {
		w.at.Spec.Suspend = nil
		w.bump()
	}
	w.faults = false
	for range 200 {
		w.refreshCache()
		w.reconcile()
		w.kubelet()
		w.now = w.now.Add(time.Minute)
	}
	w.refreshCache()
	w.reconcile()
	if w.at != nil && w.at.Status.Reason != cnatv1beta1.ReasonPodNameTaken {
		w.g.Expect(w.at.Status.Phase.Finished()).To(BeTrue(), func() string {
			return fmt.Sprintf("At %s never finished: %+v\nhistory:\n  %s", w.at.UID, w.at.Status, strings.Join(last(history, 30), "\n  "))
		})
	}
	for _, p := range w.pods {
		if w.at == nil || podIncarnation(p) != w.at.UID || w.at.Status.Phase.Finished() {
			w.g.Expect(p.Finalizers).To(BeEmpty(), "Pod %s keeps its finalizer though its At is gone or finished", p.Name)
		}
	}
	if w.at != nil {
		for attempt := range w.created[w.at.UID] {
			w.g.Expect(attempt).To(BeNumerically("<=", w.at.Status.Attempts), "Pod of attempt %d was created but the status counts %d attempts", attempt, w.at.Status.Attempts)
		}
	}
}

func TestModel(t *testing.T) {
	histories, steps := 3000, 80
	if testing.Short() {
		histories = 300
	}
	g := NewWithT(t)
	events, pods := 0, 0
	for seed := range uint64(histories) {
		w := newModelWorld(g, seed)
		history := make([]string, 0, steps)
		for range steps {
			history = append(history, w.step())
			w.expectIntact(history)
		}
		w.settle(history)
		w.expectIntact(history)
		events += w.steps
		pods += w.creations
	}
	t.Logf("%d histories, %d random events, %d Pods created", histories, events, pods)
}
