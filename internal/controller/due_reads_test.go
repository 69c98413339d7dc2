package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/atpod"
)

// A burst of Ats due at one instant is confirmed with one LIST. These tests
// count its reads, and attack it with a cache that still shows what was
// changed before the instant.

// dueAt is the instant the bursts of these tests are due at.
var dueAt = start.Add(time.Minute)

// createDue creates the Ats of names due at dueAt with command and
// reconciles each once before the instant, as the controller does when it
// sees them created: their status records the instant they are due at.
func (h *harness) createDue(command string, names ...string) {
	h.t.Helper()
	for _, name := range names {
		h.createAt(name, cnatv1beta1.AtSpec{Schedule: schedule(dueAt), Command: command})
		h.reconcile(name)
	}
}

// fireTogether reconciles the Ats of names at once, as the workers do when
// their timers go off together, with r.
func (h *harness) fireTogether(r *AtReconciler, names []string) {
	h.t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	for i, name := range names {
		wg.Go(func() {
			_, errs[i] = r.Reconcile(h.ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: h.ns, Name: name}})
		})
	}
	wg.Wait()
	h.g.Expect(errors.Join(errs...)).NotTo(HaveOccurred())
}

// names are n names with prefix.
func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

func TestAtsDueTogetherAreConfirmedWithOneRead(t *testing.T) {
	h := newHarness(t)
	burst := names("burst", 20)
	h.createDue("echo burst", burst...)
	h.clock.SetTime(dueAt)

	// The reads the confirmations make. The first GET waits until the LIST
	// has started: the confirmations of a burst overlap, as those of the
	// workers woken at one instant do.
	var gets, lists atomic.Int32
	listing := make(chan struct{})
	var listed sync.Once
	h.r.APIReader = interceptor.NewClient(apiClient, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*cnatv1beta1.At); ok && gets.Add(1) == 1 {
				select {
				case <-listing:
				case <-time.After(10 * time.Second):
				}
			}
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if isAtList(list) {
				lists.Add(1)
				listed.Do(func() { close(listing) })
			}
			return c.List(ctx, list, opts...)
		},
	})
	h.fireTogether(h.r, burst)

	for _, name := range burst {
		h.g.Expect(h.pods(name)).To(HaveLen(1), "At %s started", name)
	}
	h.g.Expect(lists.Load()).To(Equal(int32(1)), "one LIST for the burst")
	h.g.Expect(gets.Load()).To(Equal(int32(1)), "and a GET only for the start that came before it")
}

// staleClient reads Ats as snapshot holds them, the way a lagging informer
// cache shows them, and everything else from the API server. It lists no
// Ats by field, as a cache cannot.
func staleClient(snapshot map[types.NamespacedName]*cnatv1beta1.At) client.WithWatch {
	return interceptor.NewClient(apiClient, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if at, ok := obj.(*cnatv1beta1.At); ok && snapshot[key] != nil {
				snapshot[key].DeepCopyInto(at)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if isAtList(list) {
				return errors.New("a cache lists no Ats by field")
			}
			return c.List(ctx, list, opts...)
		},
	})
}

// earlyLister reads from the API server, but lists the Ats of snapshot, as
// a LIST made earlier in the burst returned them.
func earlyLister(snapshot map[types.NamespacedName]*cnatv1beta1.At) client.WithWatch {
	return interceptor.NewClient(apiClient, interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if !isAtList(list) {
				return c.List(ctx, list, opts...)
			}
			ats := list.(*metav1.PartialObjectMetadataList)
			for _, at := range snapshot {
				ats.Items = append(ats.Items, metav1.PartialObjectMetadata{ObjectMeta: *at.ObjectMeta.DeepCopy()})
			}
			return nil
		},
	})
}

// overlapping is api with the confirmations of a burst overlapping, as
// those of the workers woken at one instant do: the first GET of an At
// waits until the burst's LIST has started. got is called with each At
// read with its own GET.
func overlapping(api client.WithWatch, got func(client.ObjectKey)) client.WithWatch {
	var gets atomic.Int32
	listing := make(chan struct{})
	var listed sync.Once
	return interceptor.NewClient(api, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*cnatv1beta1.At); ok {
				got(key)
				if gets.Add(1) == 1 {
					select {
					case <-listing:
					case <-time.After(10 * time.Second):
					}
				}
			}
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if isAtList(list) {
				listed.Do(func() { close(listing) })
			}
			return c.List(ctx, list, opts...)
		},
	})
}

// isAtList says whether list is the metadata-only list of Ats that the
// burst's LIST asks for.
func isAtList(list client.ObjectList) bool {
	meta, ok := list.(*metav1.PartialObjectMetadataList)
	return ok && meta.GroupVersionKind() == cnatv1beta1.GroupVersion.WithKind("AtList")
}

// TestBurstStartsOnlyWhatTheAPIServerHolds: Ats due together are changed
// just before their instant: deleted; deleted and created again with
// another command, once seen by the controller before the instant and once
// not; suspended; moved later; given another command. At the instant each
// starts as the API server holds it, or not at all, whether the cache still
// shows them as they were, or the burst's LIST does, or both with the LIST
// older than the cache. The judge reads the
// Pods from the API server; run with a controller that trusts its cache, it
// finds what went wrong.
func TestBurstStartsOnlyWhatTheAPIServerHolds(t *testing.T) {
	type snapshot = map[types.NamespacedName]*cnatv1beta1.At
	for name, setup := range map[string]struct {
		// readers are the controller's cache and API reader; listed is what
		// the burst's LIST returns of the Ats, cached what the cache shows.
		readers func(listed, cached snapshot) (cache, api client.WithWatch)
		// touched: every At but the kept ones is changed once between the
		// two snapshots (a label), so that listed is older than cached;
		// without it they are one snapshot.
		touched bool
		// trusting is the controller that confirms with its cache: the
		// judge must find what it did wrong.
		trusting bool
	}{
		"the cache lags": {readers: func(_, before snapshot) (client.WithWatch, client.WithWatch) {
			return staleClient(before), apiClient
		}},
		"the burst's LIST is older than the cache": {readers: func(before, _ snapshot) (client.WithWatch, client.WithWatch) {
			return apiClient, earlyLister(before)
		}},
		// Both at once: the cache lags behind the API server, and the LIST
		// is older still. The kept Ats, unchanged since the LIST, are
		// confirmed by it; the others by their own GET.
		"the cache lags and the burst's LIST is older than the cache": {touched: true, readers: func(listed, cached snapshot) (client.WithWatch, client.WithWatch) {
			return staleClient(cached), earlyLister(listed)
		}},
		"trusting the cache (the judge's check)": {trusting: true, readers: func(_, before snapshot) (client.WithWatch, client.WithWatch) {
			return staleClient(before), staleClient(before)
		}},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			gone, again, anew, paused := names("gone", 3), names("again", 3), names("anew", 3), names("paused", 3)
			later, edited, kept := names("later", 3), names("edited", 3), names("kept", 3)
			all := slices.Concat(gone, again, anew, paused, later, edited, kept)
			h.createDue("echo old", all...)
			snap := func() snapshot {
				out := snapshot{}
				for _, name := range all {
					out[types.NamespacedName{Namespace: h.ns, Name: name}] = h.at(name)
				}
				return out
			}
			listed := snap()
			cached := listed
			if setup.touched {
				for _, name := range slices.Concat(gone, again, anew, paused, later, edited) {
					at := h.at(name)
					at.Labels = map[string]string{"touched": "once"}
					h.g.Expect(apiClient.Update(h.ctx, at)).To(Succeed())
				}
				cached = snap()
			}

			for _, name := range slices.Concat(gone, again, anew) {
				h.g.Expect(apiClient.Delete(h.ctx, h.at(name))).To(Succeed())
			}
			h.createDue("echo new", again...) // seen by the controller: its status names the instant
			for _, name := range anew {
				h.createAt(name, cnatv1beta1.AtSpec{Schedule: schedule(dueAt), Command: "echo new"})
			}
			for _, name := range paused {
				h.updateSpec(name, func(s *cnatv1beta1.AtSpec) { s.Suspend = ptr.To(true) })
			}
			for _, name := range later {
				h.updateSpec(name, func(s *cnatv1beta1.AtSpec) { s.Schedule = schedule(dueAt.Add(time.Hour)) })
			}
			for _, name := range edited {
				h.updateSpec(name, func(s *cnatv1beta1.AtSpec) { s.Command = "echo new" })
			}

			h.clock.SetTime(dueAt)
			r := h.newReconciler(interceptor.Funcs{})
			cache, api := setup.readers(listed, cached)
			var keptGets atomic.Int32
			if setup.touched {
				api = overlapping(api, func(key client.ObjectKey) {
					if slices.Contains(kept, key.Name) {
						keptGets.Add(1)
					}
				})
			}
			r.Client, r.APIReader = cache, api
			h.fireTogether(r, all)

			var findings []string
			expect := func(names []string, command string) {
				for _, name := range names {
					live := &cnatv1beta1.At{}
					if err := apiClient.Get(h.ctx, types.NamespacedName{Namespace: h.ns, Name: name}, live); apierrors.IsNotFound(err) {
						live = nil
					} else {
						h.g.Expect(err).NotTo(HaveOccurred())
					}
					findings = append(findings, judgeStart(name, live, h.pods(name), command)...)
				}
			}
			expect(gone, "")
			expect(slices.Concat(again, anew, edited), "echo new")
			expect(slices.Concat(paused, later), "")
			expect(kept, "echo old")
			if setup.touched {
				h.g.Expect(keptGets.Load()).To(BeNumerically("<=", 1), "the kept Ats, the same since the LIST, are confirmed by it (all but one that came before it)")
			}
			if setup.trusting {
				h.g.Expect(findings).To(ContainElements(
					HavePrefix("gone-0: Pod gone-0-"), HavePrefix("again-0: Pod again-0-"), HavePrefix("anew-0: Pod anew-0-"),
					HavePrefix("paused-0: 1 Pods"), HavePrefix("edited-0: Pod runs [/bin/sh -c echo old]")))
				return
			}
			h.g.Expect(findings).To(BeEmpty())
		})
	}
}

// updateSpec changes the spec of the At on the API server.
func (h *harness) updateSpec(name string, change func(*cnatv1beta1.AtSpec)) {
	h.t.Helper()
	at := h.at(name)
	change(&at.Spec)
	h.g.Expect(apiClient.Update(h.ctx, at)).To(Succeed())
}

// judgeStart says what is wrong with the Pods of the At name: live is the At
// the API server holds (nil if none), command the command its one Pod must
// run ("" if it must have none).
func judgeStart(name string, live *cnatv1beta1.At, pods []corev1.Pod, command string) []string {
	var findings []string
	for _, pod := range pods {
		if live == nil {
			findings = append(findings, fmt.Sprintf("%s: Pod %s exists, but no At of this name", name, pod.Name))
		} else if _, err := atpod.RunOf(&pod, live); err != nil {
			findings = append(findings, fmt.Sprintf("%s: Pod %s is not the run of the At of this name: %v", name, pod.Name, err))
		}
	}
	switch {
	case command == "" && len(pods) > 0:
		findings = append(findings, fmt.Sprintf("%s: %d Pods, want none", name, len(pods)))
	case command != "" && len(pods) != 1:
		findings = append(findings, fmt.Sprintf("%s: %d Pods, want 1", name, len(pods)))
	case command != "":
		if got := pods[0].Spec.Containers[0].Command; !slices.Equal(got, []string{"/bin/sh", "-c", command}) {
			findings = append(findings, fmt.Sprintf("%s: Pod runs %v, want %q", name, got, command))
		}
	}
	return findings
}

// TestAtsSelectableByStatus: the status fields the controller lists by, and
// that users filter by, are field selectors of the CRD.
func TestAtsSelectableByStatus(t *testing.T) {
	h := newHarness(t)
	h.createDue("echo now", "now")
	h.createAt("later", cnatv1beta1.AtSpec{Schedule: schedule(dueAt.Add(time.Hour)), Command: "echo later"})
	h.reconcile("later")

	selected := func(field, value string) []string {
		var ats cnatv1beta1.AtList
		h.g.Expect(apiClient.List(h.ctx, &ats, client.InNamespace(h.ns), client.MatchingFields{field: value})).To(Succeed())
		var out []string
		for _, at := range ats.Items {
			out = append(out, at.Name)
		}
		return out
	}
	h.g.Expect(selected(cnatv1beta1.FieldScheduledTime, dueAt.Format(time.RFC3339))).To(ConsistOf("now"))
	h.g.Expect(selected(cnatv1beta1.FieldPhase, string(cnatv1beta1.PhasePending))).To(ConsistOf("now", "later"))
	h.g.Expect(selected(cnatv1beta1.FieldPhase, string(cnatv1beta1.PhaseRunning))).To(BeEmpty())
}
