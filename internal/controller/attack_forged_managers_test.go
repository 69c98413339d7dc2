package controller

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	. "github.com/onsi/gomega"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/controller/atstatus"
)

// These attacks forge managedFields entries in the status writer's name
// (atstatus.StatusFieldManager) rather than strip them. The API server
// tells managers apart by name, operation and subresource (and, for an
// Update, apiVersion); the status writer's check (atstatus.leftBehind)
// counts as its own every Apply entry under its name, whatever its
// subresource. A co-tenant with `patch ats` only (no ats/status) can write
// such an entry through the main resource: the API server stores the
// managedFields a request sends as they are.

// forgeManagedFields has mallory replace the At's managedFields with what
// forge makes of them, through a merge patch of the main resource.
func (h *harness) forgeManagedFields(mallory client.Client, name string, forge func([]metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry) {
	h.t.Helper()
	entries := forge(h.at(name).ManagedFields)
	raw, err := json.Marshal(map[string]any{"metadata": map[string]any{"managedFields": entries}})
	h.g.Expect(err).NotTo(HaveOccurred())
	at := &cnatv1beta1.At{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns}}
	h.g.Expect(mallory.Patch(h.ctx, at, client.RawPatch(types.MergePatchType, raw))).
		To(Succeed(), "a user with patch on ats writes the At's managedFields")
	for _, e := range h.at(name).ManagedFields {
		h.t.Logf("stored managedFields entry: manager %q, operation %s, subresource %q, %d bytes, escaped key kept: %t",
			e.Manager, e.Operation, e.Subresource, len(e.FieldsV1.GetRawBytes()), bytes.Contains(e.FieldsV1.GetRawBytes(), []byte(`\u0073`)))
	}
}

// forgedFromStatusEntry rewrites a copy of the status writer's own entry
// (Apply, subresource status) with rewrite, and keeps the original too if
// keep.
func forgedFromStatusEntry(entries []metav1.ManagedFieldsEntry, keep bool, rewrite func(*metav1.ManagedFieldsEntry)) []metav1.ManagedFieldsEntry {
	out := make([]metav1.ManagedFieldsEntry, 0, len(entries)+1)
	for _, e := range entries {
		if e.Manager != atstatus.StatusFieldManager || e.Subresource != "status" {
			out = append(out, e)
			continue
		}
		if keep {
			out = append(out, e)
		}
		rewrite(&e)
		out = append(out, e)
	}
	return out
}

// statusEntryMovedToMain moves the status writer's entry to the main
// resource: to the API server another manager, which owns every status
// field, so the writer's apply removes none of them.
func statusEntryMovedToMain(entries []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	return forgedFromStatusEntry(entries, false, func(e *metav1.ManagedFieldsEntry) { e.Subresource = "" })
}

// statusEntryCopiedToMain adds a copy of the status writer's entry on the
// main resource: every status field owned by two managers, which an apply
// that omits it therefore keeps.
func statusEntryCopiedToMain(entries []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	return forgedFromStatusEntry(entries, true, func(e *metav1.ManagedFieldsEntry) { e.Subresource = "" })
}

// statusClaimedByAnother adds an Update entry of another manager on the
// main resource that owns every status field the status writer owns: the
// status writer then finds every field it leaves out shared, and writes the
// status whole.
func statusClaimedByAnother(entries []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	return forgedFromStatusEntry(entries, true, func(e *metav1.ManagedFieldsEntry) {
		e.Manager, e.Operation, e.Subresource = "mallory", metav1.ManagedFieldsOperationUpdate, ""
	})
}

// statusClaimedByAnotherEscaped is statusClaimedByAnother with the key
// f:status written with a JSON escape (f:\u0073tatus): the same field set
// to the API server, if it keeps the bytes as sent; invisible to a search
// of the bytes for "f:status".
func statusClaimedByAnotherEscaped(entries []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	out := statusClaimedByAnother(entries)
	last := &out[len(out)-1]
	raw := bytes.ReplaceAll(last.FieldsV1.GetRawBytes(), []byte(`"f:status"`), []byte(`"f:\u0073tatus"`))
	last.FieldsV1 = metav1.NewFieldsV1(string(raw))
	return out
}

// TestAttackForgedStatusManagerLeavesTheAtReconciling: while the At's only
// attempt runs, mallory (patch ats only) moves the status writer's entry to
// the main resource, or copies it there. The command exits 0. The At must
// be Succeeded without the condition Reconciling, which its status no
// longer has (kstatus, Flux and `kubectl wait` read a Succeeded At that is
// still Reconciling as in progress for good).
func TestAttackForgedStatusManagerLeavesTheAtReconciling(t *testing.T) {
	for name, forge := range map[string]func([]metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry{
		"moved to the main resource":                  statusEntryMovedToMain,
		"copied to the main resource":                 statusEntryCopiedToMain,
		"claimed by another manager, the key escaped": statusClaimedByAnotherEscaped,
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			mallory := h.atPatcher()
			h.r = h.newReconciler(interceptor.Funcs{Get: getTrimmed})

			const at = "forged"
			podName := h.runningAt(at)
			h.forgeManagedFields(mallory, at, forge)
			h.finishPod(podName, 0)
			for range 3 {
				_ = h.reconcileErr(at)
				h.clock.Step(10 * time.Second)
			}
			final := h.at(at)
			for _, c := range final.Status.Conditions {
				t.Logf("condition %s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message)
			}
			h.g.Expect(final.Status.Phase).To(Equal(cnatv1beta1.PhaseSucceeded))
			h.g.Expect(final.Status.Conditions).NotTo(ContainElement(HaveField("Type", cnatv1beta1.ConditionReconciling)),
				"a Succeeded At is not Reconciling")
		})
	}
}

// TestAttackForgedStatusManagerFreezesTheAt: the retrying At of
// TestAttackStrippedManagedFieldsFreezeTheAt, with the status writer's
// entry moved to the main resource instead of stripped. Its command exits
// 0 on the second attempt; the At must say Succeeded, and release the Pod.
func TestAttackForgedStatusManagerFreezesTheAt(t *testing.T) {
	h := newHarness(t)
	mallory := h.atPatcher()
	h.r = h.newReconciler(interceptor.Funcs{Get: getTrimmed})

	const name = "frozen"
	h.createAt(name, cnatv1beta1.AtSpec{Schedule: schedule(start), Command: "sleep 600", BackoffLimit: ptr.To[int32](1)})
	h.reconcile(name)
	h.finishPod(h.podName(name, 1), 1)
	h.reconcile(name)
	h.g.Expect(h.at(name).Status.Reason).To(Equal(cnatv1beta1.ReasonRetrying))
	h.forgeManagedFields(mallory, name, statusEntryMovedToMain)

	h.clock.Step(time.Minute)
	h.reconcile(name)
	podName := h.podName(name, 2)
	h.runPod(podName)
	_ = h.reconcileErr(name)
	h.finishPod(podName, 0)
	errs := h.reconcileForAMinute(name)
	final := h.at(name)
	t.Logf("the At a minute after its command exited 0: phase %s, reason %s, message %q", final.Status.Phase, final.Status.Reason, final.Status.Message)
	for _, c := range final.Status.Conditions {
		t.Logf("condition %s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message)
	}
	t.Logf("the finished Pod's finalizers: %v", h.pod(podName).Finalizers)
	h.g.Expect(final.Status.Phase).To(Equal(cnatv1beta1.PhaseSucceeded), "the command exited 0")
	h.g.Expect(final.Status.Conditions).NotTo(ContainElement(HaveField("Type", cnatv1beta1.ConditionReconciling)))
	h.g.Expect(h.pod(podName).Finalizers).NotTo(ContainElement(cnatv1beta1.TrackingFinalizer), "released once its run is recorded")
	h.g.Expect(errs).To(BeEmpty())
}

// TestAttackForgedStatusManagerWriteCount counts the controller's writes on
// an At whose status writer's entry mallory moved to the main resource,
// once the At has finished: a settled At makes none
// (TestSettledAtMakesNoWrites), and a forged entry must not make the
// controller write on every reconcile.
func TestAttackForgedStatusManagerWriteCount(t *testing.T) {
	for name, forge := range map[string]func([]metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry{
		"moved to the main resource":  statusEntryMovedToMain,
		"copied to the main resource": statusEntryCopiedToMain,
		"claimed by another manager":  statusClaimedByAnother,
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			mallory := h.atPatcher()
			h.r = h.newReconciler(interceptor.Funcs{Get: getTrimmed})
			const at = "counted"
			podName := h.runningAt(at)
			h.forgeManagedFields(mallory, at, forge)
			h.finishPod(podName, 0)
			for range 3 {
				_ = h.reconcileErr(at)
			}
			h.g.Expect(h.at(at).Status.Phase).To(Equal(cnatv1beta1.PhaseSucceeded))
			h.writes.Store(0)
			for range 10 {
				_ = h.reconcileErr(at)
			}
			t.Logf("writes in 10 reconciles of the finished At: %d", h.writes.Load())
			h.g.Expect(h.writes.Load()).To(BeZero())
		})
	}
}

// TestAttackRepeatedForgeryWhileRunning: mallory moves the status writer's
// entry to the main resource again and again while the At's command runs,
// each time followed by a reconcile (the At's change wakes it). The
// controller must not write more than once for each of her writes (no
// loop of its own), and the At must still end Succeeded and not
// Reconciling once the command exits 0 and she stops.
func TestAttackRepeatedForgeryWhileRunning(t *testing.T) {
	h := newHarness(t)
	mallory := h.atPatcher()
	h.r = h.newReconciler(interceptor.Funcs{Get: getTrimmed})
	const at = "repeated"
	podName := h.runningAt(at)
	h.writes.Store(0)
	const rounds = 5
	for range rounds {
		h.forgeManagedFields(mallory, at, statusEntryMovedToMain)
		for range 3 {
			_ = h.reconcileErr(at)
		}
	}
	t.Logf("controller writes for %d forgeries (3 reconciles each) while the command runs: %d", rounds, h.writes.Load())
	h.g.Expect(h.writes.Load()).To(BeNumerically("<=", rounds), "at most one write for each of hers")
	h.finishPod(podName, 0)
	for range 3 {
		_ = h.reconcileErr(at)
	}
	final := h.at(at)
	h.g.Expect(final.Status.Phase).To(Equal(cnatv1beta1.PhaseSucceeded))
	h.g.Expect(final.Status.Conditions).NotTo(ContainElement(HaveField("Type", cnatv1beta1.ConditionReconciling)))
}
