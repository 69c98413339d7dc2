package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/atcache"
	"github.com/programming-kubernetes/cnat/internal/atpod"
	"github.com/programming-kubernetes/cnat/internal/lifecycle"
)

// AtReconciler runs each At's command in a Pod at the At's time.
type AtReconciler struct {
	// Client reads from the informer cache and writes to the API server.
	Client client.Client
	// APIReader reads from the API server directly: a decision that starts a
	// Pod, or that rests on something being gone, is confirmed with it.
	APIReader client.Reader
	// Clock is the time source; tests inject a fake one.
	Clock clock.PassiveClock
	// Recorder emits Events on the At.
	Recorder events.EventRecorder
	// Pods are the settings for the rendered Pods (default image, pull policy).
	Pods atpod.PodOptions
	// Metrics records firing lateness, outcomes and phases; nil records
	// nothing.
	Metrics *Metrics
	// PodCreateGuard asks, before each Pod it creates, whether the At's
	// author may still create Pods in its namespace (authorizeAuthor).
	PodCreateGuard bool
	// Prefetch is how long before an At needs the controller it is read
	// whole and kept in memory (atcache.Store); zero: atcache.DefaultPrefetch.
	Prefetch time.Duration

	// ats is the store of Ats (SetupWithManager); without it, as in tests
	// that call Reconcile directly, Ats are read with Client.
	ats *atcache.Store

	// podsIndexed is set once the cache indexes Pods by their At label, so
	// finding an At's Pods does not scan the namespace.
	podsIndexed bool

	// dueReads confirms the first starts of Ats due together with one read.
	dueReads atcache.DueReads

	// reviews asks the author checks of Ats due together once per round
	// trip (authorizeAuthor).
	reviews accessReviews

	// history is what the Pod watch showed that a Pod's latest state no
	// longer shows.
	history podHistory

	// conflicts is the backoff of Ats whose status write conflicted
	// (newConflicts, SetupWithManager).
	conflicts workqueue.TypedRateLimiter[reconcile.Request]

	// retries times the work queue's retries after an error (retryLimiter,
	// SetupWithManager).
	retries workqueue.TypedRateLimiter[reconcile.Request]
	// shares is the part of retries that counts each namespace's failing
	// Ats; Reconcile asks it for the priority of a retry.
	shares *namespaceShares

	// holdList wraps the store's ListerWatcher: tests hold its list back.
	holdList func(cache.ListerWatcher) cache.ListerWatcher
}

// podsByAt is the name of the cache index of Pods by the At label's value.
const podsByAt = "cnat.programming-kubernetes.info/at"

// +kubebuilder:rbac:groups=cnat.programming-kubernetes.info,resources=ats,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=cnat.programming-kubernetes.info,resources=ats/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=cnat.programming-kubernetes.info,resources=ats/finalizers,verbs=update
//
// The Pods the controller creates name their At as owner with
// blockOwnerDeletion; under the OwnerReferencesPermissionEnforcement
// admission plugin (OpenShift enables it) that needs update on the At's
// finalizers subresource.
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile runs lifecycle.Reconcile for the At over the cache and the API
// server (effects), and turns its result into controller-runtime's. Every
// requeue is at the work queue's normal priority, but the retry of an At
// whose namespace has more failing Ats than its share (retries.go):
// unnamed, controller-runtime keeps the priority the At was taken out with,
// and a Pod of the first list after a restart enqueues its At low
// (handler.LowPriority), which every later retry and timer would inherit,
// behind all other work.
func (r *AtReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	res, err := r.reconcileAt(ctx, req)
	res.Priority = ptr.To(0)
	if err != nil && r.shares != nil && !errors.Is(err, reconcile.TerminalError(nil)) {
		res.Priority = ptr.To(r.shares.priority(req))
	}
	return res, err
}

// reconcileAt is Reconcile but for the priority.
func (r *AtReconciler) reconcileAt(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	now := r.Clock.Now()
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("at", klog.KRef(req.Namespace, req.Name)))
	e := &effects{r: r, ctx: ctx, key: req.NamespacedName}
	res, err := lifecycle.Reconcile(e, now)
	if apierrors.IsConflict(err) && !res.Refused {
		// Decided on an older copy of the At than the API server's
		// (conflicts.go): tried again shortly, on the copy the watch will
		// have brought by then. A Pod create refused with a 409 (a webhook,
		// a quota under contention) is a refusal, retried as one.
		delay := r.conflicts.When(req)
		ctrl.LoggerFrom(ctx).V(1).Info("The At changed since the copy the decision was made on; trying again", "after", delay, "error", err.Error())
		return ctrl.Result{RequeueAfter: delay}, nil
	}
	r.conflicts.Forget(req)
	switch {
	case err != nil:
		return ctrl.Result{}, err
	case res.Stalled != nil:
		// Not retried: no longer one of its namespace's failing Ats.
		if r.retries != nil {
			r.retries.Forget(req)
		}
		return ctrl.Result{}, reconcile.TerminalError(res.Stalled)
	}
	if r.ats != nil && e.settled() {
		r.ats.Settle(e.at, res.Until)
	}
	if res.Until.IsZero() {
		return ctrl.Result{}, nil
	}
	// Counted from now, not from the reconcile's start: the work queue
	// counts the wait from when it is handed the result, and a reconcile
	// whose status write took seconds (an API server busy admitting a
	// burst) would otherwise wake the At as much after its time.
	wait := max(res.Until.Sub(r.Clock.Now()), 0)
	// A long wait is the store's heap's, not a timer of the work queue's:
	// it wakes the At prefetch ahead, and the reconcile then sets the short
	// wait that remains.
	if r.ats != nil && wait > r.ats.Prefetch() && r.ats.WakeAt(req.NamespacedName, res.Until.Add(-r.ats.Prefetch())) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: wait + atcache.WakeUpPad}, nil
}

// confirmAt reads the At of a decision made on the cache from the API
// server: a first start due at the instant the At's status records is
// confirmed together with the other Ats due then (dueReads), anything else
// with a GET.
func (r *AtReconciler) confirmAt(ctx context.Context, key types.NamespacedName, cached *cnatv1beta1.At, d lifecycle.Decision) (*cnatv1beta1.At, error) {
	get := func() (*cnatv1beta1.At, error) { return r.readAt(ctx, r.APIReader, key) }
	if cached == nil || d.Action != lifecycle.CreatePod || d.Attempt != 1 || d.ConfirmPods ||
		cached.Status.ScheduledTime == nil || !cached.Status.ScheduledTime.Time.Equal(d.ScheduledTime) {
		return get()
	}
	return r.dueReads.Confirm(ctx, r.APIReader, cached, d.ScheduledTime, r.Clock.Now(), get)
}

// readAt gets the At, nil if there is none, from the cache or from the API
// server.
func (r *AtReconciler) readAt(ctx context.Context, reader client.Reader, key types.NamespacedName) (*cnatv1beta1.At, error) {
	at := &cnatv1beta1.At{}
	if err := reader.Get(ctx, key, at); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading At %s: %w", key.Name, err)
	}
	return at, nil
}

// readPods lists the Pods labelled with the At's name, from the cache (by
// its index, if indexed) or from the API server.
func (r *AtReconciler) readPods(ctx context.Context, reader client.Reader, key types.NamespacedName, indexed bool) ([]corev1.Pod, error) {
	var pods corev1.PodList
	var selector client.ListOption = client.MatchingLabels{cnatv1beta1.LabelAt: key.Name}
	if indexed {
		selector = client.MatchingFields{podsByAt: key.Name}
	}
	if err := reader.List(ctx, &pods, client.InNamespace(key.Namespace), selector); err != nil {
		return nil, fmt.Errorf("listing the Pods of At %s: %w", key.Name, err)
	}
	r.history.mark(pods.Items)
	return pods.Items, nil
}

// createPod creates (never applies) the Pod of the decision's attempt. It
// returns no refusal when the At's own Pod exists (atpod.RunOf); anything
// else under its name is never adopted or changed, and said on the At.
func (r *AtReconciler) createPod(ctx context.Context, at *cnatv1beta1.At, d lifecycle.Decision) (*lifecycle.Refusal, error) {
	if refusal := r.authorizeAuthor(ctx, at); refusal != nil {
		return refusal, nil
	}
	pod := atpod.NewPod(at, d.Attempt, d.ScheduledTime, r.Pods)
	name := pod.Name
	ctrl.LoggerFrom(ctx).Info("Creating Pod", "pod", name, "attempt", d.Attempt)
	err := r.Client.Create(ctx, pod, client.FieldOwner(cnatv1beta1.FieldManager))
	switch {
	case err == nil:
		if d.Attempt == 1 {
			r.Metrics.recordLateness(r.Clock.Now().Sub(d.ScheduledTime))
		}
		// What the API server stored, after every mutating admission: a Pod
		// stripped of cnat's claims is one the cache never shows, so nothing
		// would ever release it; its name still keeps the attempt from
		// being made twice.
		return r.notTheRun(ctx, pod, at, "was created, but as the API server stored it (after mutating admission) it is not this At's run", nil)
	case apierrors.IsAlreadyExists(err):
		existing := &corev1.Pod{}
		getErr := r.APIReader.Get(ctx, client.ObjectKey{Namespace: at.Namespace, Name: name}, existing)
		switch {
		case apierrors.IsNotFound(getErr):
			// An admission webhook that answers 409 for a Pod that is not
			// there: a refusal like any other.
			return &lifecycle.Refusal{Reason: cnatv1beta1.ReasonPodForbidden, Err: fmt.Errorf("creating Pod %s: %w (and no Pod of that name exists)", name, err)}, nil
		case getErr != nil:
			return nil, fmt.Errorf("reading Pod %s, which exists already: %w", name, getErr)
		}
		return r.notTheRun(ctx, existing, at, "exists but is not this At's run", err)
	}
	err = fmt.Errorf("creating Pod %s: %w", name, err)
	return &lifecycle.Refusal{Reason: judgeRefusal(err), Err: err}, nil
}

// notTheRun is nil when pod is at's run (atpod.RunOf), else the refusal
// that reports it (PodNameTaken): cnat never adopts, changes or counts it.
// cause is the create's error, if it failed. Such a Pod that carries the
// tracking finalizer, which only cnat can put on a Pod, is one cnat made
// and the API server stored without its claims: the cache never shows it,
// so it is released here, whichever reconcile finds it.
func (r *AtReconciler) notTheRun(ctx context.Context, pod *corev1.Pod, at *cnatv1beta1.At, how string, cause error) (*lifecycle.Refusal, error) {
	_, why := atpod.RunOf(pod, at)
	if why == nil {
		return nil, nil
	}
	if controllerutil.ContainsFinalizer(pod, cnatv1beta1.TrackingFinalizer) {
		if err := r.release(ctx, pod); err != nil {
			return nil, err
		}
	}
	err := fmt.Errorf("pod %s is not the run of At %s: %w", pod.Name, at.Name, why)
	if cause != nil {
		err = fmt.Errorf("creating Pod %s: %w", pod.Name, cause)
	}
	return &lifecycle.Refusal{
		Reason:  cnatv1beta1.ReasonPodNameTaken,
		Message: fmt.Sprintf("Pod %s %s: %v; cnat never adopts, changes or counts it: delete it to let the At run", pod.Name, how, why),
		Err:     err,
	}, nil
}

// release removes the tracking finalizer from a Pod and labels it released,
// out of the Pod cache (CacheOptions); the patch touches only those, on that
// very Pod (its UID).
func (r *AtReconciler) release(ctx context.Context, pod *corev1.Pod) error {
	ctrl.LoggerFrom(ctx).V(1).Info("Releasing Pod", "pod", klog.KObj(pod))
	patch := fmt.Sprintf(`{"metadata":{"uid":%q,"labels":{%q:"true"},"$deleteFromPrimitiveList/finalizers":[%q]}}`,
		pod.UID, cnatv1beta1.LabelReleased, cnatv1beta1.TrackingFinalizer)
	err := r.Client.Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, []byte(patch)), client.FieldOwner(cnatv1beta1.FieldManager))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing the tracking finalizer of Pod %s: %w", pod.Name, err)
	}
	return nil
}

// SetupWithManager registers the reconciler: Ats through the At cache, and
// the Pods that carry an At's name, orphans too (they must be released); up
// to concurrency Ats at once.
func (r *AtReconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, podsByAt, func(pod client.Object) []string {
		if name := pod.GetLabels()[cnatv1beta1.LabelAt]; name != "" {
			return []string{name}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("indexing Pods by At: %w", err)
	}
	r.podsIndexed = true
	r.conflicts = newConflicts()
	r.shares = newNamespaceShares()
	r.retries = retryLimiter(r.shares)
	clk, ok := r.Clock.(clock.WithTicker)
	if !ok {
		clk = clock.RealClock{}
	}
	r.ats = atcache.New(clk, r.Prefetch, r.APIReader, mgr.GetLogger().WithName("ats"))
	var lw cache.ListerWatcher
	lw, err = atcache.ListWatch(mgr)
	if err != nil {
		return err
	}
	if r.holdList != nil {
		lw = r.holdList(lw)
	}
	if err := mgr.Add(r.ats.Runnable(lw)); err != nil {
		return fmt.Errorf("adding the At store: %w", err)
	}
	r.Metrics.countAts(r.ats)
	return ctrl.NewControllerManagedBy(mgr).
		WatchesRawSource(r.ats.Source()).
		Watches(&corev1.Pod{}, r.history.podEvents()).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency, RateLimiter: r.retries}).
		Named("at").
		Complete(r)
}

// atOfPod maps a Pod to the At whose name it carries.
func atOfPod(_ context.Context, pod client.Object) []reconcile.Request {
	name := pod.GetLabels()[cnatv1beta1.LabelAt]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: pod.GetNamespace(), Name: name}}}
}
