package manifests

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// lockDuration is how long a set's lock holds unrenewed (renewed every third):
// the longest a killed cnatctl keeps others out.
const lockDuration = 60 * time.Second

// LockRef names the Lease an apply holds on its set, as cnatctl prints objects.
func (s *ApplySet) LockRef() string {
	return "Lease/" + s.Namespace + "/" + s.ParentName
}

// lock takes the set's lock, a Lease beside the parent, waiting at most
// timeout for another holder (named); the context ends if it is lost. Without
// the inventory namespace there is no lock: no other apply wrote there either.
func (a *Applier) lock(ctx context.Context, timeout time.Duration) (context.Context, func(), error) {
	s := a.opts.Set
	holder := lockHolder()
	deadline := time.Now().Add(timeout)
	reported := ""
	for {
		lease := &coordinationv1.Lease{}
		err := a.client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.ParentName}, lease)
		switch {
		case apierrors.IsNotFound(err):
			lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.ParentName}}
			take(lease, holder)
			err = a.client.Create(ctx, lease, client.FieldOwner(ToolingName))
			if apierrors.IsNotFound(err) {
				return ctx, func() {}, nil
			}
		case err != nil:
		case heldByAnother(lease, holder):
			other := ptr.Deref(lease.Spec.HolderIdentity, "")
			if time.Now().After(deadline) {
				since := "an unknown time"
				if lease.Spec.AcquireTime != nil {
					since = lease.Spec.AcquireTime.UTC().Format(time.RFC3339)
				}
				return ctx, nil, fmt.Errorf("another cnatctl (%s) is applying this set: it holds %s since %s; waited %s (--timeout); try again once it is done (a holder that was killed lets go %s after its last renewal); nothing was applied",
					other, s.LockRef(), since, timeout, lockDuration)
			}
			if reported != other {
				a.printf("waiting for another cnatctl (%s), which is applying this set (%s), for at most %s...\n", other, s.LockRef(), timeout)
				reported = other
			}
			select {
			case <-ctx.Done():
				return ctx, nil, ctx.Err()
			case <-time.After(a.opts.PollInterval):
			}
			continue
		default:
			take(lease, holder)
			err = a.client.Update(ctx, lease, client.FieldOwner(ToolingName))
		}
		switch {
		case err == nil:
			return a.keep(ctx, lease, holder)
		case apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err):
			continue // another cnatctl was faster: look again
		default:
			return ctx, nil, fmt.Errorf("taking the lock of the set (%s): %w", s.LockRef(), err)
		}
	}
}

// keep renews the lease until unlock, which deletes it if still this holder's.
func (a *Applier) keep(ctx context.Context, lease *coordinationv1.Lease, holder string) (context.Context, func(), error) {
	ctx, cancel := context.WithCancelCause(ctx)
	renewing, stopRenewing := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// The update is not cancelled by unlock: the lease's resourceVersion
		// must be the one the API server last returned.
		_ = wait.PollUntilContextCancel(renewing, lockDuration/3, false, func(context.Context) (bool, error) {
			lease.Spec.RenewTime = ptr.To(metav1.NewMicroTime(time.Now()))
			if err := a.client.Update(ctx, lease, client.FieldOwner(ToolingName)); apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				cancel(fmt.Errorf("lost the lock of the set (%s) to another cnatctl", a.opts.Set.LockRef()))
				return true, nil
			}
			return false, nil
		})
	}()
	unlock := func() {
		stopRenewing()
		<-done
		// Released even when the apply was cancelled.
		ctx, stopRelease := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer stopRelease()
		uid, rv := lease.UID, lease.ResourceVersion
		_ = a.client.Delete(ctx, lease, client.Preconditions{UID: &uid, ResourceVersion: &rv})
		cancel(nil)
	}
	return ctx, unlock, nil
}

// take makes lease held by holder from now on.
func take(lease *coordinationv1.Lease, holder string) {
	now := ptr.To(metav1.NewMicroTime(time.Now()))
	lease.Spec = coordinationv1.LeaseSpec{
		HolderIdentity:       &holder,
		LeaseDurationSeconds: ptr.To(int32(lockDuration / time.Second)),
		AcquireTime:          now,
		RenewTime:            now,
	}
}

// heldByAnother says whether another holder holds lease unexpired.
func heldByAnother(lease *coordinationv1.Lease, holder string) bool {
	other := ptr.Deref(lease.Spec.HolderIdentity, "")
	if other == "" || other == holder || lease.Spec.RenewTime == nil {
		return false
	}
	expires := lease.Spec.RenewTime.Add(time.Duration(ptr.Deref(lease.Spec.LeaseDurationSeconds, 0)) * time.Second)
	return time.Now().Before(expires)
}

// lockHolder names this process: host, pid and a random suffix.
func lockHolder() string {
	host, _ := os.Hostname()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b))
}
