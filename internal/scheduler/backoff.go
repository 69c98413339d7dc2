package scheduler

import "time"

const (
	firstRetryDelay = 10 * time.Second
	maxRetryDelay   = 6 * time.Minute
)

// RetryDelay is how long to wait after the failed attempt number failed
// (1-based) before the next: 10s doubling to six minutes, as Kubernetes spaces
// a Job's failed Pods; 0 when nothing has failed.
func RetryDelay(failed int32) time.Duration {
	if failed <= 0 {
		return 0
	}
	delay := firstRetryDelay
	for range failed - 1 {
		if delay >= maxRetryDelay {
			break
		}
		delay *= 2
	}
	return min(delay, maxRetryDelay)
}
