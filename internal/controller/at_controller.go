package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/programming-kubernetes/cnat/api/applyconfiguration"
	cnatac "github.com/programming-kubernetes/cnat/api/applyconfiguration/api/v1beta1"
	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/apply"
)

// wakeUpPad is added to every timer so that a wake-up lands just after the
// instant it waits for, not a hair before it.
const wakeUpPad = 10 * time.Millisecond

// AtReconciler runs each At's command in a Pod at the At's time.
type AtReconciler struct {
	// Client reads from the informer cache and writes to the API server.
	Client client.Client
	// APIReader reads from the API server directly. It confirms that a Pod
	// missing from the cache is really gone before the At is failed for it.
	APIReader client.Reader
	// Clock is the time source; tests inject a fake one.
	Clock clock.PassiveClock
	// Recorder emits Events on the At.
	Recorder events.EventRecorder
	// Pods are the settings for the rendered Pods (default image, pull policy).
	Pods apply.PodOptions
	// Metrics records firing lateness, outcomes and phases; nil records
	// nothing.
	Metrics *Metrics
}

// +kubebuilder:rbac:groups=cnat.programming-kubernetes.info,resources=ats,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=cnat.programming-kubernetes.info,resources=ats/status,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings one At one step along its life: wait for the schedule,
// start a Pod, follow it, retry it, record the result, delete the At when
// its TTL is up.
func (r *AtReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	at := &cnatv1beta1.At{}
	if err := r.Client.Get(ctx, req.NamespacedName, at); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !at.DeletionTimestamp.IsZero() {
		// Its Pods go with it: they have it as their controller owner.
		return ctrl.Result{}, nil
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("at", klog.KObj(at)))

	s := newScope(at, r.Clock.Now())
	result, err := r.reconcile(ctx, s)
	if s.deleted {
		return result, err
	}
	if statusErr := r.writeStatus(ctx, s); statusErr != nil {
		// A status not written is retried even when the reconcile's own
		// error was terminal: the At must say what happened.
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Reconcile failed")
		}
		return ctrl.Result{}, statusErr
	}
	return result, err
}

// reconcile dispatches on the At's phase to the phase functions.
func (r *AtReconciler) reconcile(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.status.Phase.Finished() {
		return r.reconcileFinished(ctx, s)
	}
	scheduled, err := s.scheduledTime()
	if err != nil {
		return r.reconcileInvalid(ctx, s, err)
	}
	// Derived from the spec every time, never read back from the status: a
	// status the controller did not get to write must not be needed.
	s.status.ScheduledTime = timestamp(scheduled)
	pods, err := r.ownedPods(ctx, s.at)
	if err != nil {
		return ctrl.Result{}, err
	}
	attempt := latestAttempt(s.status.Attempts, pods)
	if attempt == 0 {
		return r.reconcilePending(ctx, s, scheduled)
	}
	return r.reconcileAttempt(ctx, s, attempt, pods[attempt], scheduled)
}

// writeStatus applies the status the reconcile computed, under the status
// field manager, unless it equals what that manager already owns. Events
// and metrics of the transition are emitted only once it is written.
func (r *AtReconciler) writeStatus(ctx context.Context, s *scope) error {
	desired, err := statusApplyConfiguration(s.at, s.status)
	if err != nil {
		return err
	}
	owned, err := cnatac.ExtractAtStatus(s.at, cnatv1beta1.StatusFieldManager)
	if err != nil {
		return fmt.Errorf("reading the status fields owned by %s: %w", cnatv1beta1.StatusFieldManager, err)
	}
	unchanged, err := apply.Unchanged(applyconfiguration.NewTypeConverter(r.Client.Scheme()), desired, owned)
	if err != nil {
		return err
	}
	if unchanged {
		return nil
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Writing status", "phase", s.status.Phase, "reason", s.status.Reason)
	if err := r.Client.Status().Apply(ctx, desired, client.FieldOwner(cnatv1beta1.StatusFieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying status: %w", err)
	}
	for _, e := range s.events {
		r.Recorder.Eventf(s.at, nil, e.eventType, e.reason, e.reason, "%s", e.note)
	}
	for _, observe := range s.observations {
		observe(r.Metrics)
	}
	return nil
}

// ownedPods returns the At's Pods from the cache by attempt number. Only
// Pods with the At as controller count: a Pod that merely carries the label
// is not the At's.
func (r *AtReconciler) ownedPods(ctx context.Context, at *cnatv1beta1.At) (map[int32]*corev1.Pod, error) {
	var list corev1.PodList
	if err := r.Client.List(ctx, &list, client.InNamespace(at.Namespace), client.MatchingLabels{cnatv1beta1.LabelAt: at.Name}); err != nil {
		return nil, fmt.Errorf("listing the Pods of At %s: %w", at.Name, err)
	}
	pods := make(map[int32]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		pod := &list.Items[i]
		if ref := metav1.GetControllerOf(pod); ref == nil || ref.UID != at.UID {
			continue
		}
		if attempt, ok := attemptOf(pod); ok {
			pods[attempt] = pod
		}
	}
	return pods, nil
}

// SetupWithManager registers the reconciler: it watches Ats and the Pods
// they control. Status-only changes of an At do not trigger a reconcile.
func (r *AtReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&cnatv1beta1.At{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&corev1.Pod{}).
		Named("at").
		Complete(r)
}
