// Package controller holds the At reconciler and its watches: it carries
// out lifecycle.Reconcile over the At cache (internal/atcache), the Pod
// cache and the API server (effects.go), writes the status (at_status.go)
// and keeps what the Pod watch saw (pod_watch.go).
package controller
