package lifecycle

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/atpod"
)

// Effects are what one reconcile of an At reads and writes: the controller's
// over its cache and the API server, the model test's over its model API
// server, so the model test checks the Reconcile that runs.
type Effects interface {
	// CachedAt and CachedPods read the At (nil if there is none) and the
	// Pods labelled with its name as the controller's cache shows them.
	CachedAt() (*cnatv1beta1.At, error)
	CachedPods() ([]corev1.Pod, error)
	// FreshAt reads the At from the API server for decision d, made on
	// cached (the controller confirms Ats due together with one LIST).
	FreshAt(cached *cnatv1beta1.At, d Decision) (*cnatv1beta1.At, error)
	// FreshPods lists the At's Pods from the API server.
	FreshPods() ([]corev1.Pod, error)
	// CreatePod creates the Pod of d.Attempt. It returns nil when the Pod
	// exists (created now, or by an earlier reconcile), else what refused
	// it; an error when what happened is not known.
	CreatePod(at *cnatv1beta1.At, d Decision) (*Refusal, error)
	// WriteStatus writes status on at (only if it changed, conditioned on
	// at's resourceVersion), with the Events of the change.
	WriteStatus(at *cnatv1beta1.At, status *cnatv1beta1.AtStatus) error
	// Release removes the tracking finalizer of pod.
	Release(pod *corev1.Pod) error
	// DeleteAt deletes at, whose TTL after finishing is up.
	DeleteAt(at *cnatv1beta1.At) error
}

// Refusal is why the API server did not create a Pod, or why the
// controller did not ask it to.
type Refusal struct {
	// Reason is the At's status reason: PodForbidden, PodCreateFailed,
	// PodNameTaken, PodInvalid or AuthorForbidden.
	Reason string
	// Message is what the At says; the text of Err when empty.
	Message string
	// Err is the refusal itself, returned by Reconcile: the At is tried
	// again with the controller's bounded backoff.
	Err error
}

// MaxSilence is the longest a due At goes without a reconcile while its
// status does not yet report its attempt: after a create, until the Pod's
// watch event brings the decision that reports it.
const MaxSilence = 30 * time.Second

// Result is what a reconcile leaves to do.
type Result struct {
	// Until is when to look again; zero: only on a change.
	Until time.Time
	// Stalled is set when the spec cannot be acted on: no retry helps until
	// it is edited.
	Stalled error
	// Refused is set with the error of a refused Pod create: whatever its
	// code (a webhook may answer 409), it is a refusal to retry with the
	// errors' backoff, not a stale copy of the At to read again.
	Refused bool
}

// Reconcile is one reconcile of an At, in the order docs/architecture.md
// gives ("One reconcile"); an error stops it where it happened, and the next
// starts over from what is stored.
func Reconcile(e Effects, now time.Time) (Result, error) {
	at, err := e.CachedAt()
	if err != nil {
		return Result{}, err
	}
	pods, err := e.CachedPods()
	if err != nil {
		return Result{}, err
	}
	d := Decide(at, pods, now)
	if d.Confirm || d.ConfirmPods {
		// The cache may lag behind the API server: read what the decision
		// rests on afresh and decide again on that.
		if at, err = e.FreshAt(at, d); err != nil {
			return Result{}, err
		}
		podsFresh := d.ConfirmPods
		if podsFresh {
			if pods, err = e.FreshPods(); err != nil {
				return Result{}, err
			}
		}
		d = Decide(at, pods, now)
		if d.ConfirmPods && !podsFresh {
			if pods, err = e.FreshPods(); err != nil {
				return Result{}, err
			}
			d = Decide(at, pods, now)
		}
	}
	return carryOut(e, at, d, now)
}

func carryOut(e Effects, at *cnatv1beta1.At, d Decision, now time.Time) (Result, error) {
	if d.Action == CreatePod {
		refusal, err := e.CreatePod(at, d)
		if err != nil {
			return Result{}, err
		}
		if refusal == nil {
			// The Pod records its attempt; its watch event's reconcile writes
			// the status, or the look after MaxSilence does.
			return Result{Until: now.Add(MaxSilence)}, nil
		}
		// The refusal is the status, at once; other incarnations' Pods are
		// released all the same (a name taken for good must not hold them).
		message := refusal.Message
		if message == "" {
			message = refusal.Err.Error()
		}
		if err := e.WriteStatus(at, NotCreated(at, d, now, refusal.Reason, message)); err != nil {
			return Result{}, err
		}
		for _, pod := range d.Release {
			if _, err := atpod.RunOf(pod, at); err == nil {
				continue
			}
			if err := e.Release(pod); err != nil {
				return Result{}, err
			}
		}
		return Result{Refused: true}, refusal.Err
	}
	if d.Status != nil {
		if err := e.WriteStatus(at, d.Status); err != nil {
			return Result{}, err
		}
	}
	for _, pod := range d.Release {
		if err := e.Release(pod); err != nil {
			return Result{}, err
		}
	}
	if d.Action == DeleteAt {
		return Result{}, e.DeleteAt(at)
	}
	if d.InvalidSpec != nil {
		return Result{Stalled: d.InvalidSpec}, nil
	}
	return Result{Until: d.Until}, nil
}
