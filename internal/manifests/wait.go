package manifests

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"github.com/fluxcd/cli-utils/pkg/object"
	"github.com/fluxcd/pkg/ssa"
)

// wait waits at most timeout until objects are Current by kstatus, printing
// progress (unless quiet); its error lists each object not ready and why.
func (a *Applier) wait(ctx context.Context, objects []*unstructured.Unstructured, what string, timeout time.Duration, quiet bool) error {
	if len(objects) == 0 {
		return nil
	}
	if !quiet {
		a.printf("waiting for %s to become ready (timeout %s)...\n", what, timeout)
	}
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		done <- a.rm.WaitForSetWithContext(ctx, object.UnstructuredSetToObjMetadataSet(objects), ssa.WaitOptions{Interval: a.opts.PollInterval, Timeout: timeout})
	}()
	ticker := time.NewTicker(a.opts.ProgressInterval)
	defer ticker.Stop()
	for {
		select {
		case err := <-done:
			if err == nil {
				if !quiet {
					a.printf("%s%s ready after %s\n", strings.ToUpper(what[:1]), what[1:], time.Since(start).Round(100*time.Millisecond))
				}
				return nil
			}
			if notReady := a.notReady(ctx, objects); len(notReady) > 0 {
				return fmt.Errorf("waiting for %s: %w; not ready after %s: %s", what, err, time.Since(start).Round(time.Second), strings.Join(notReady, "; "))
			}
			return fmt.Errorf("waiting for %s: %w", what, err)
		case <-ticker.C:
			if notReady := a.notReady(ctx, objects); len(notReady) > 0 {
				a.printf("still waiting for %d of %d after %s: %s\n", len(notReady), len(objects), time.Since(start).Round(time.Second), strings.Join(notReady, "; "))
			}
		}
	}
}

// notReady reads every one of objects and returns, for each that is not
// Current, "<ref>: <status>: <message>".
func (a *Applier) notReady(ctx context.Context, objects []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objects {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(o.GroupVersionKind())
		res := &status.Result{Status: status.NotFoundStatus}
		err := a.client.Get(ctx, client.ObjectKeyFromObject(o), u)
		if err == nil {
			res, err = status.Compute(u)
		} else if apierrors.IsNotFound(err) {
			err = nil
		}
		switch {
		case errors.Is(err, context.Canceled):
		case err != nil:
			out = append(out, Ref(o)+": "+err.Error())
		case res.Status != status.CurrentStatus && res.Message != "":
			out = append(out, Ref(o)+": "+res.Status.String()+": "+res.Message)
		case res.Status != status.CurrentStatus:
			out = append(out, Ref(o)+": "+res.Status.String())
		}
	}
	return out
}
