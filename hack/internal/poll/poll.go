// Package poll is the harness's one way to wait: a condition polled until it
// holds, for at most a timeout (apimachinery's wait), and a sleep that ends
// with its context.
package poll

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Until calls done at once and then every interval until it returns true or
// an error, for at most timeout. When timeout passes first it returns what
// late returns (late nil: nil, the caller goes on regardless); when ctx ends,
// ctx's error. done's context ends with the timeout.
func Until(ctx context.Context, interval, timeout time.Duration, done func(context.Context) (bool, error), late func() error) error {
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, done)
	if wait.Interrupted(err) && ctx.Err() == nil {
		if late == nil {
			return nil
		}
		return late()
	}
	return err
}

// Sleep waits d, or until ctx is done, and then says which.
func Sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
