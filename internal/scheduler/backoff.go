package scheduler

import "time"

// The delays the Kubernetes documentation gives for recreating a Job's
// failed pods: 10s, 20s, 40s, ... capped at six minutes.
const (
	firstRetryDelay = 10 * time.Second
	maxRetryDelay   = 6 * time.Minute
)

// RetryDelay is how long to wait after the failed attempt number failed
// (1-based) before starting the next one: 10s, 20s, 40s, ... doubling up to
// a cap of six minutes, reached from the seventh failure on, as the
// Kubernetes documentation describes the back-off for the failed pods of a
// Job. It is 0 when nothing has failed (failed <= 0).
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
