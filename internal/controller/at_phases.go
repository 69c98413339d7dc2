package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/apply"
	"github.com/programming-kubernetes/cnat/internal/scheduler"
)

// reconcilePending handles an At that has not fired: wait for its time,
// hold it while suspended, miss it past its deadline, or start it.
func (r *AtReconciler) reconcilePending(ctx context.Context, s *scope, scheduled time.Time) (ctrl.Result, error) {
	decision := s.plan(scheduled).Decide(s.now)
	switch decision.Action {
	case scheduler.Wait:
		s.markPending(cnatv1beta1.ReasonScheduled, fmt.Sprintf("Runs at %s", scheduled.UTC().Format(time.RFC3339)))
		ctrl.LoggerFrom(ctx).V(1).Info("Waiting for the schedule", "after", decision.After)
		return ctrl.Result{RequeueAfter: decision.After + wakeUpPad}, nil
	case scheduler.Suspended:
		s.markPending(cnatv1beta1.ReasonSuspended, fmt.Sprintf("Suspended; scheduled for %s", scheduled.UTC().Format(time.RFC3339)))
		return ctrl.Result{}, nil
	case scheduler.Miss:
		s.markMissed(fmt.Sprintf("Not run: scheduled for %s, its starting deadline of %ds had passed at %s",
			scheduled.UTC().Format(time.RFC3339), *s.at.Spec.StartingDeadlineSeconds, s.now.UTC().Format(time.RFC3339)))
		return r.reconcileFinished(ctx, s)
	default:
		lateness := decision.Lateness
		s.observe(func(m *Metrics) { m.recordLateness(lateness) })
		return r.startAttempt(ctx, s, 1, scheduled)
	}
}

// reconcileAttempt follows the Pod of the latest attempt: record it while it
// runs, retry it or record the outcome once it finished, and report it when
// it disappeared before finishing.
func (r *AtReconciler) reconcileAttempt(ctx context.Context, s *scope, attempt int32, pod *corev1.Pod, scheduled time.Time) (ctrl.Result, error) {
	name := apply.PodName(s.at.Name, attempt)
	if pod == nil {
		var err error
		if pod, err = r.confirmPod(ctx, s.at.Namespace, name); err != nil {
			return ctrl.Result{}, err
		}
	}
	switch {
	case pod == nil && s.status.Reason == cnatv1beta1.ReasonRetrying:
		// The failed Pod is gone while waiting to retry; retry now.
		return r.startAttempt(ctx, s, attempt+1, scheduled)
	case pod == nil:
		s.markFailed(cnatv1beta1.ReasonPodDeleted, fmt.Sprintf("Pod %s was deleted before it finished; it is not run again", name), podResult{})
		return r.reconcileFinished(ctx, s)
	case pod.Status.Phase == corev1.PodSucceeded:
		s.status.PodName = name
		s.status.Attempts = attempt
		s.markSucceeded(resultOf(pod))
		return r.reconcileFinished(ctx, s)
	case pod.Status.Phase == corev1.PodFailed:
		s.status.PodName = name
		return r.reconcileFailedAttempt(ctx, s, attempt, pod, scheduled)
	case !pod.DeletionTimestamp.IsZero():
		s.markFailed(cnatv1beta1.ReasonPodDeleted, fmt.Sprintf("Pod %s was deleted before it finished; it is not run again", name), resultOf(pod))
		return r.reconcileFinished(ctx, s)
	default:
		s.markRunning(attempt, name)
		return ctrl.Result{}, nil
	}
}

// reconcileFailedAttempt retries a failed attempt after its backoff if the
// backoff limit allows, and fails the At otherwise.
func (r *AtReconciler) reconcileFailedAttempt(ctx context.Context, s *scope, attempt int32, pod *corev1.Pod, scheduled time.Time) (ctrl.Result, error) {
	result := resultOf(pod)
	failure := describeFailure(pod.Name, result)
	if attempt > s.backoffLimit() {
		reason := cnatv1beta1.ReasonError
		switch {
		case result.reason == cnatv1beta1.ReasonDeadlineExceeded:
			reason = cnatv1beta1.ReasonDeadlineExceeded
		case s.backoffLimit() > 0:
			reason = cnatv1beta1.ReasonBackoffLimitExceeded
			failure = fmt.Sprintf("%s; no retry left after %d attempts", failure, attempt)
		}
		s.markFailed(reason, failure, result)
		return r.reconcileFinished(ctx, s)
	}
	failedAt := result.finishedAt
	if failedAt.IsZero() {
		failedAt = s.now
	}
	retryAt := failedAt.Add(scheduler.RetryDelay(attempt))
	if s.now.Before(retryAt) {
		s.markRetrying(attempt, result, fmt.Sprintf("%s; attempt %d of %d starts at %s",
			failure, attempt+1, s.backoffLimit()+1, retryAt.UTC().Format(time.RFC3339)))
		return ctrl.Result{RequeueAfter: retryAt.Sub(s.now) + wakeUpPad}, nil
	}
	s.status.ExitCode = result.exitCode
	return r.startAttempt(ctx, s, attempt+1, scheduled)
}

// startAttempt applies the Pod of attempt. The name is the attempt's, so an
// apply repeated after a crash or by another replica lands on the same Pod;
// without forced ownership it also fails, rather than takes over, if
// someone else's Pod has that name.
func (r *AtReconciler) startAttempt(ctx context.Context, s *scope, attempt int32, scheduled time.Time) (ctrl.Result, error) {
	pod, err := apply.RenderPod(s.at, attempt, scheduled, r.Pods)
	if err != nil {
		return r.reconcileInvalid(ctx, s, err)
	}
	ctrl.LoggerFrom(ctx).Info("Starting Pod", "pod", *pod.Name, "attempt", attempt)
	if err := r.Client.Apply(ctx, pod, client.FieldOwner(cnatv1beta1.FieldManager)); err != nil {
		err = fmt.Errorf("applying Pod %s: %w", *pod.Name, err)
		switch {
		case apierrors.IsInvalid(err):
			// The template makes a Pod the API server rejects: trying again
			// cannot help until the spec changes.
			return r.reconcileInvalid(ctx, s, err)
		case apierrors.IsForbidden(err):
			// A quota or a policy refused the Pod. They may change, so the
			// error is returned and retried with backoff.
			s.markPodForbidden(err.Error())
		}
		return ctrl.Result{}, err
	}
	s.markRunning(attempt, *pod.Name)
	return ctrl.Result{}, nil
}

// reconcileInvalid records that the spec cannot be acted on. Waiting will
// not help, so the error is terminal: the next try comes with the next edit.
func (r *AtReconciler) reconcileInvalid(_ context.Context, s *scope, err error) (ctrl.Result, error) {
	s.markInvalid(err.Error())
	return ctrl.Result{}, reconcile.TerminalError(err)
}

// reconcileFinished handles an At that has finished: keep its conditions
// current and delete it once its TTL is up.
func (r *AtReconciler) reconcileFinished(ctx context.Context, s *scope) (ctrl.Result, error) {
	s.refreshObservedGeneration()
	ttl := s.at.Spec.TTLSecondsAfterFinished
	if ttl == nil || s.status.CompletionTime == nil {
		return ctrl.Result{}, nil
	}
	expiry := s.status.CompletionTime.Add(time.Duration(*ttl) * time.Second)
	if s.now.Before(expiry) {
		return ctrl.Result{RequeueAfter: expiry.Sub(s.now) + wakeUpPad}, nil
	}
	if s.at.Status.Phase != s.status.Phase {
		// Record the outcome before the At goes, for whoever watches it.
		if err := r.writeStatus(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
	}
	ctrl.LoggerFrom(ctx).Info("Deleting At: its TTL after finishing is up", "ttlSecondsAfterFinished", *ttl)
	err := r.Client.Delete(ctx, s.at, client.Preconditions{UID: &s.at.UID}, client.PropagationPolicy("Background"))
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("deleting At after its TTL: %w", err)
	}
	s.deleted = true
	return ctrl.Result{}, nil
}

// confirmPod reads a Pod the cache does not have from the API server: the
// cache may simply not have caught up with a Pod just created.
func (r *AtReconciler) confirmPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, pod)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading Pod %s: %w", name, err)
	}
	return pod, nil
}
