package judge

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp/cmpopts"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 11, 22, 23, 0, 0, 0, time.UTC)

// pod is a Pod of At uid owner (empty: no owner) with the given phase and
// exit code (nil: still running).
func pod(name, uid, owner string, phase corev1.PodPhase, exit *int32) corev1.Pod {
	p := corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "chaos", Name: name, UID: types.UID(uid)},
		Spec:       corev1.PodSpec{NodeName: "kwok-node-0", Containers: []corev1.Container{{Name: "command"}}},
		Status:     corev1.PodStatus{Phase: phase},
	}
	if owner != "" {
		p.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "cnat.programming-kubernetes.info/v1beta1", Kind: "At", Name: "x",
			UID: types.UID(owner), Controller: ptr.To(true),
		}}
	}
	if exit != nil {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name:  "command",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: *exit, StartedAt: metav1.NewTime(t0)}},
		}}
	}
	return p
}

// deletedWhileRunning is p as the API server holds it after a deletion
// that gave it a grace period: it was running.
func deletedWhileRunning(p corev1.Pod) corev1.Pod {
	p.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	p.DeletionGracePeriodSeconds = ptr.To[int64](30)
	return p
}

// disrupted is p with the DisruptionTarget condition of an eviction.
func disrupted(p corev1.Pod) corev1.Pod {
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI"})
	return p
}

// unstarted is p Failed by its kubelet, disrupted before any container
// started (no container status shows a start).
func unstarted(p corev1.Pod) corev1.Pod {
	p.Status.Phase = corev1.PodFailed
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name:  "command",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "ContainerStatusUnknown"}},
	}}
	return disrupted(p)
}

// lostWithItsNode is p as PodGC leaves it when its node is gone: Failed,
// its command last seen running, no exit code.
func lostWithItsNode(p corev1.Pod) corev1.Pod {
	p.Status.Phase = corev1.PodFailed
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "command", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t0)}}}}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByPodGC"})
	return p
}

// event is one audit log line: verb on the Pod (subresource "" or
// "status"), answered with code, at t0+second.
func event(verb, subresource string, code int, p corev1.Pod, second int) string {
	obj, err := json.Marshal(p)
	if err != nil {
		panic(err)
	}
	ev := map[string]any{
		"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse",
		"stage": "ResponseComplete", "verb": verb,
		"objectRef":                map[string]any{"resource": "pods", "namespace": p.Namespace, "name": p.Name, "subresource": subresource, "apiVersion": "v1"},
		"responseStatus":           map[string]any{"code": code},
		"responseObject":           json.RawMessage(obj),
		"requestReceivedTimestamp": t0.Add(time.Duration(second) * time.Second).Format(metav1.RFC3339Micro),
	}
	line, err := json.Marshal(ev)
	if err != nil {
		panic(err)
	}
	return string(line)
}

func read(g Gomega, lines ...string) Record {
	rec, err := ReadAudit(strings.NewReader(strings.Join(lines, "\n")+"\n"), func(ns string) bool { return ns == "chaos" })
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return rec
}

func succeeded(uid, podName string) Incarnation {
	return Incarnation{UID: uid, Namespace: "chaos", Name: "x", Alive: true, Phase: "Succeeded", Reason: "Completed", PodName: podName, ExitCode: ptr.To[int32](0)}
}

func TestJudge(t *testing.T) {
	zero, three := ptr.To[int32](0), ptr.To[int32](3)
	tests := map[string]struct {
		log                []string
		incarnations       []Incarnation
		wantPods           int
		wantDuplicates     int
		wantLost           int
		wantSilent         int
		wantFalseSucceeded int
		wantFinding        string
	}{
		"one run, created by apply, reported": {
			log: []string{
				event("patch", "", 201, pod("x-1", "p1", "a1", corev1.PodPending, nil), 1),
				event("patch", "", 200, pod("x-1", "p1", "a1", corev1.PodPending, nil), 2), // a re-apply is no create
				event("patch", "status", 200, pod("x-1", "p1", "a1", corev1.PodSucceeded, zero), 3),
			},
			incarnations: []Incarnation{succeeded("a1", "x-1")},
			wantPods:     1,
		},
		"a create answered 504 that made the Pod all the same": {
			log: []string{
				event("create", "", 504, pod("x-1", "p1", "a1", corev1.PodPending, nil), 1),
				event("patch", "status", 200, pod("x-1", "p1", "a1", corev1.PodSucceeded, zero), 3),
			},
			incarnations: []Incarnation{succeeded("a1", "x-1")},
			wantPods:     1,
		},
		"a status write logged before its Pod's create is one Pod": {
			log: []string{
				event("patch", "status", 200, pod("x-1", "p1", "a1", corev1.PodSucceeded, zero), 1),
				event("create", "", 201, pod("x-1", "p1", "a1", corev1.PodPending, nil), 1),
			},
			incarnations: []Incarnation{succeeded("a1", "x-1")},
			wantPods:     1,
		},
		"a hand-made duplicate Pod": {
			log: []string{
				event("create", "", 201, pod("x-1", "p1", "a1", corev1.PodPending, nil), 1),
				event("patch", "status", 200, pod("x-1", "p1", "a1", corev1.PodSucceeded, zero), 3),
				event("create", "", 201, pod("duplicate", "p2", "a1", corev1.PodPending, nil), 4),
			},
			incarnations:   []Incarnation{succeeded("a1", "x-1")},
			wantPods:       2,
			wantDuplicates: 1,
			wantFinding:    "duplicate: At chaos/x (uid a1): Pod duplicate (uid p2) attempt 2 of at most 1",
		},
		"the same Pod name created again after the first was deleted unrecorded": {
			log: []string{
				event("patch", "", 201, pod("x-1", "p1", "a1", corev1.PodPending, nil), 1),
				event("patch", "status", 200, pod("x-1", "p1", "a1", corev1.PodSucceeded, zero), 3),
				event("patch", "", 201, pod("x-1", "p2", "a1", corev1.PodPending, nil), 9),
				event("patch", "status", 200, pod("x-1", "p2", "a1", corev1.PodSucceeded, zero), 11),
			},
			incarnations:   []Incarnation{succeeded("a1", "x-1")},
			wantPods:       2,
			wantDuplicates: 1,
		},
		"a retry after a failure is allowed": {
			log: []string{
				event("patch", "", 201, pod("x-1", "p1", "a1", corev1.PodPending, nil), 1),
				event("patch", "status", 200, pod("x-1", "p1", "a1", corev1.PodFailed, three), 3),
				event("patch", "", 201, pod("x-2", "p2", "a1", corev1.PodPending, nil), 13),
				event("patch", "status", 200, pod("x-2", "p2", "a1", corev1.PodFailed, three), 15),
			},
			incarnations: []Incarnation{{UID: "a1", Namespace: "chaos", Name: "x", BackoffLimit: 1, Alive: true, Phase: "Failed", PodName: "x-2", ExitCode: three}},
			wantPods:     2,
		},
		"a retry while the first attempt runs": {
			log: []string{
				event("patch", "", 201, pod("x-1", "p1", "a1", corev1.PodPending, nil), 1),
				event("patch", "", 201, pod("x-2", "p2", "a1", corev1.PodPending, nil), 2),
				event("patch", "status", 200, pod("x-1", "p1", "a1", corev1.PodFailed, three), 3),
				event("patch", "status", 200, pod("x-2", "p2", "a1", corev1.PodFailed, three), 4),
			},
			incarnations:   []Incarnation{{UID: "a1", Namespace: "chaos", Name: "x", BackoffLimit: 1, Alive: true, Phase: "Failed", PodName: "x-2", ExitCode: three}},
			wantPods:       2,
			wantDuplicates: 1,
			wantFinding:    "created before Pod x-1 (uid p1) failed",
		},
		"a re-created At that reports the old incarnation's Pod": {
			log: []string{
				event("patch", "", 201, pod("x-1", "p1", "old", corev1.PodPending, nil), 1),
				event("patch", "status", 200, pod("x-1", "p1", "old", corev1.PodSucceeded, zero), 3),
			},
			incarnations: []Incarnation{
				{UID: "old", Namespace: "chaos", Name: "x"},
				succeeded("new", "x-1"),
			},
			wantPods:           1,
			wantFalseSucceeded: 1,
			wantFinding:        "falseSucceeded: At chaos/x (uid new): reports a run (Succeeded, Pod \"x-1\") but no Pod was ever created for it",
		},
		"a re-created At stuck": {
			incarnations: []Incarnation{{UID: "new", Namespace: "chaos", Name: "x", Alive: true, Phase: "Pending", Reason: "InvalidSpec"}},
			wantLost:     1,
			wantFinding:  "not finished",
		},
		"Pods of someone else and of deleted incarnations are not counted against an At": {
			log: []string{
				event("create", "", 201, pod("y", "p0", "", corev1.PodPending, nil), 0),
				event("patch", "", 201, pod("x-1", "p1", "a1", corev1.PodPending, nil), 1),
				event("patch", "status", 200, pod("x-1", "p1", "a1", corev1.PodSucceeded, zero), 3),
			},
			incarnations: []Incarnation{succeeded("a1", "x-1")},
			wantPods:     1,
		},
		"an outcome other than the Pod's": {
			log: []string{
				event("patch", "", 201, pod("x-1", "p1", "a1", corev1.PodPending, nil), 1),
				event("patch", "status", 200, pod("x-1", "p1", "a1", corev1.PodFailed, three), 3),
			},
			incarnations:       []Incarnation{succeeded("a1", "x-1")},
			wantPods:           1,
			wantFalseSucceeded: 1,
			wantFinding:        "reports Succeeded (reason \"Completed\") but its last Pod x-1 (uid p1) Failed",
		},
		"a failed attempt with a retry left, not retried": {
			log: []string{
				event("patch", "", 201, pod("x-1", "p1", "a1", corev1.PodPending, nil), 1),
				event("patch", "status", 200, pod("x-1", "p1", "a1", corev1.PodFailed, three), 3),
			},
			incarnations: []Incarnation{{UID: "a1", Namespace: "chaos", Name: "x", BackoffLimit: 1, Alive: true, Phase: "Failed", Reason: "PodDeleted", PodName: "x-1", ExitCode: three}},
			wantPods:     1,
			wantLost:     1,
			wantFinding:  "failed with 1 of 2 attempts used: the retry it was owed never ran",
		},
		"a Pod deleted before it finished, reported Failed": {
			log: []string{
				event("patch", "", 201, pod("x-1", "p1", "a1", corev1.PodPending, nil), 1),
			},
			incarnations: []Incarnation{{UID: "a1", Namespace: "chaos", Name: "x", Alive: true, Phase: "Failed", Reason: "PodDeleted", PodName: "x-1"}},
			wantPods:     1,
		},
		"a Pod deleted while it ran that exited 0 on SIGTERM, reported Succeeded: a false Succeeded": {
			log: []string{
				event("patch", "", 201, pod("x-1", "p1", "a1", corev1.PodPending, nil), 1),
				event("patch", "status", 200, deletedWhileRunning(pod("x-1", "p1", "a1", corev1.PodSucceeded, zero)), 3),
			},
			incarnations:       []Incarnation{succeeded("a1", "x-1")},
			wantPods:           1,
			wantFalseSucceeded: 1,
			wantFinding:        "falseSucceeded: At chaos/x (uid a1): reports Succeeded",
		},
		"a Pod deleted while it ran, killed, reported PodDeleted with a retry left: no retry owed": {
			log: []string{
				event("patch", "", 201, pod("x-1", "p1", "a1", corev1.PodPending, nil), 1),
				event("patch", "status", 200, deletedWhileRunning(pod("x-1", "p1", "a1", corev1.PodFailed, ptr.To[int32](137))), 3),
			},
			incarnations: []Incarnation{{UID: "a1", Namespace: "chaos", Name: "x", BackoffLimit: 1, Alive: true, Phase: "Failed", Reason: "PodDeleted", PodName: "x-1", ExitCode: ptr.To[int32](137)}},
			wantPods:     1,
		},
		"a new attempt after a Pod deleted while it ran: a duplicate": {
			log: []string{
				event("patch", "", 201, pod("x-1", "p1", "a1", corev1.PodPending, nil), 1),
				event("patch", "status", 200, deletedWhileRunning(pod("x-1", "p1", "a1", corev1.PodFailed, ptr.To[int32](137))), 3),
				event("create", "", 201, pod("x-2", "p2", "a1", corev1.PodPending, nil), 15),
				event("patch", "status", 200, pod("x-2", "p2", "a1", corev1.PodSucceeded, zero), 16),
			},
			incarnations:       []Incarnation{{UID: "a1", Namespace: "chaos", Name: "x", BackoffLimit: 1, Alive: true, Phase: "Succeeded", Reason: "Completed", PodName: "x-2", ExitCode: zero}},
			wantPods:           2,
			wantDuplicates:     1,
			wantFalseSucceeded: 1, // what it reports is the duplicate's run
			wantFinding:        "was deleted while it ran",
		},
		"a Pod evicted while it ran that exited 0, reported Succeeded: a false Succeeded": {
			log: []string{
				event("patch", "", 201, pod("x-1", "p1", "a1", corev1.PodPending, nil), 1),
				event("patch", "status", 200, disrupted(pod("x-1", "p1", "a1", corev1.PodSucceeded, zero)), 3),
			},
			incarnations:       []Incarnation{succeeded("a1", "x-1")},
			wantPods:           1,
			wantFalseSucceeded: 1,
			wantFinding:        "falseSucceeded: At chaos/x (uid a1): reports Succeeded",
		},
		"another namespace and failed creates are ignored": {
			log: []string{
				event("patch", "", 409, pod("x-1", "p9", "a1", corev1.PodPending, nil), 0),
				strings.Replace(event("patch", "", 201, pod("x-1", "p8", "a1", corev1.PodPending, nil), 0), `"namespace":"chaos"`, `"namespace":"other"`, 1),
				event("patch", "", 201, pod("x-1", "p1", "a1", corev1.PodPending, nil), 1),
				event("patch", "status", 200, pod("x-1", "p1", "a1", corev1.PodSucceeded, zero), 3),
			},
			incarnations: []Incarnation{succeeded("a1", "x-1")},
			wantPods:     1,
		},
		"attempts disrupted before their command started do not use up the backoffLimit": {
			log: []string{
				event("create", "", 201, pod("x-1", "p1", "a1", corev1.PodPending, nil), 1),
				event("patch", "status", 200, unstarted(pod("x-1", "p1", "a1", corev1.PodPending, nil)), 2),
				event("create", "", 201, pod("x-2", "p2", "a1", corev1.PodPending, nil), 3),
				event("patch", "status", 200, unstarted(pod("x-2", "p2", "a1", corev1.PodPending, nil)), 4),
				event("create", "", 201, pod("x-3", "p3", "a1", corev1.PodPending, nil), 5),
				event("patch", "status", 200, pod("x-3", "p3", "a1", corev1.PodSucceeded, zero), 7),
			},
			incarnations: []Incarnation{succeeded("a1", "x-3")},
			wantPods:     3,
		},
		"an attempt evicted after its command started uses up the backoffLimit": {
			log: []string{
				event("create", "", 201, pod("x-1", "p1", "a1", corev1.PodPending, nil), 1),
				event("patch", "status", 200, disrupted(deletedWhileRunning(pod("x-1", "p1", "a1", corev1.PodFailed, ptr.To[int32](137)))), 3),
				event("create", "", 201, pod("x-2", "p2", "a1", corev1.PodPending, nil), 13),
				event("patch", "status", 200, pod("x-2", "p2", "a1", corev1.PodSucceeded, zero), 15),
			},
			incarnations:       []Incarnation{succeeded("a1", "x-2")},
			wantPods:           2,
			wantDuplicates:     1,
			wantFalseSucceeded: 1, // what it reports is the duplicate's run
			wantFinding:        "attempt 2 of at most 1",
		},
		"evicted while it ran, a retry left: retried": {
			log: []string{
				event("create", "", 201, pod("x-1", "p1", "a1", corev1.PodPending, nil), 1),
				event("patch", "status", 200, disrupted(deletedWhileRunning(pod("x-1", "p1", "a1", corev1.PodFailed, ptr.To[int32](137)))), 3),
				event("create", "", 201, pod("x-2", "p2", "a1", corev1.PodPending, nil), 13),
				event("patch", "status", 200, pod("x-2", "p2", "a1", corev1.PodSucceeded, zero), 15),
			},
			incarnations: []Incarnation{{UID: "a1", Namespace: "chaos", Name: "x", BackoffLimit: 1, Alive: true, Phase: "Succeeded", Reason: "Completed", PodName: "x-2", ExitCode: zero}},
			wantPods:     2,
		},
		"evicted while it ran, no retry left: Failed, Disrupted": {
			log: []string{
				event("create", "", 201, pod("x-1", "p1", "a1", corev1.PodPending, nil), 1),
				event("patch", "status", 200, disrupted(deletedWhileRunning(pod("x-1", "p1", "a1", corev1.PodFailed, ptr.To[int32](137)))), 3),
			},
			incarnations: []Incarnation{{UID: "a1", Namespace: "chaos", Name: "x", Alive: true, Phase: "Failed", Reason: "Disrupted", PodName: "x-1", ExitCode: ptr.To[int32](137)}},
			wantPods:     1,
		},
		"evicted while it ran, a retry left, not retried": {
			log: []string{
				event("create", "", 201, pod("x-1", "p1", "a1", corev1.PodPending, nil), 1),
				event("patch", "status", 200, disrupted(deletedWhileRunning(pod("x-1", "p1", "a1", corev1.PodFailed, ptr.To[int32](137)))), 3),
			},
			incarnations: []Incarnation{{UID: "a1", Namespace: "chaos", Name: "x", BackoffLimit: 1, Alive: true, Phase: "Failed", Reason: "Disrupted", PodName: "x-1", ExitCode: ptr.To[int32](137)}},
			wantPods:     1,
			wantLost:     1,
			wantFinding:  "the retry it was owed never ran",
		},
		"disrupted before it started, no retry left by the count, not retried": {
			log: []string{
				event("create", "", 201, pod("x-1", "p1", "a1", corev1.PodPending, nil), 1),
				event("patch", "status", 200, unstarted(pod("x-1", "p1", "a1", corev1.PodPending, nil)), 2),
			},
			incarnations: []Incarnation{{UID: "a1", Namespace: "chaos", Name: "x", Alive: true, Phase: "Failed", Reason: "Disrupted", PodName: "x-1"}},
			wantPods:     1,
			wantLost:     1,
			wantFinding:  "failed with 0 of 1 attempts used",
		},
		"evicted while it ran, reported Succeeded: a false Succeeded": {
			log: []string{
				event("create", "", 201, pod("x-1", "p1", "a1", corev1.PodPending, nil), 1),
				event("patch", "status", 200, disrupted(deletedWhileRunning(pod("x-1", "p1", "a1", corev1.PodFailed, ptr.To[int32](137)))), 3),
			},
			incarnations:       []Incarnation{succeeded("a1", "x-1")},
			wantPods:           1,
			wantFalseSucceeded: 1,
			wantFinding:        "its last Pod x-1 (uid p1) Failed, disrupted",
		},
		"evicted after a status write showed it running, its terminal write shows no start: it started, no retry owed": {
			log: []string{
				event("create", "", 201, pod("x-1", "p1", "a1", corev1.PodPending, nil), 1),
				event("patch", "status", 200, func() corev1.Pod {
					p := pod("x-1", "p1", "a1", corev1.PodRunning, nil)
					p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "command", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t0)}}}}
					return p
				}(), 2),
				event("patch", "status", 200, unstarted(deletedWhileRunning(pod("x-1", "p1", "a1", corev1.PodFailed, nil))), 3),
			},
			incarnations: []Incarnation{{UID: "a1", Namespace: "chaos", Name: "x", Alive: true, Phase: "Failed", Reason: "Disrupted", PodName: "x-1", ExitCode: ptr.To[int32](137)}},
			wantPods:     1,
		},
		"evicted once its kubelet acknowledged it (startTime), no container shown started: it may have run, no retry owed": {
			log: []string{
				event("create", "", 201, pod("x-1", "p1", "a1", corev1.PodPending, nil), 1),
				event("patch", "status", 200, func() corev1.Pod {
					p := unstarted(pod("x-1", "p1", "a1", corev1.PodFailed, nil))
					p.Status.StartTime = ptr.To(metav1.NewTime(t0))
					return p
				}(), 3),
			},
			incarnations: []Incarnation{{UID: "a1", Namespace: "chaos", Name: "x", Alive: true, Phase: "Failed", Reason: "Disrupted", PodName: "x-1", ExitCode: ptr.To[int32](137)}},
			wantPods:     1,
		},
		"reports no exit code, its last Pod exited 3": {
			log: []string{
				event("create", "", 201, pod("x-1", "p1", "a1", corev1.PodPending, nil), 1),
				event("patch", "status", 200, pod("x-1", "p1", "a1", corev1.PodFailed, three), 3),
			},
			incarnations: []Incarnation{{UID: "a1", Namespace: "chaos", Name: "x", Alive: true, Phase: "Failed", Reason: "Error", PodName: "x-1"}},
			wantPods:     1,
			wantLost:     1,
			wantFinding:  "reports exit code none but its last Pod x-1 (uid p1) exited 3",
		},
		"reports an exit code none of its Pods exited with": {
			log: []string{
				event("create", "", 201, pod("x-1", "p1", "a1", corev1.PodPending, nil), 1),
				event("patch", "status", 200, lostWithItsNode(pod("x-1", "p1", "a1", corev1.PodFailed, nil)), 3),
			},
			incarnations: []Incarnation{{UID: "a1", Namespace: "chaos", Name: "x", Alive: true, Phase: "Failed", Reason: "Disrupted", PodName: "x-1", ExitCode: three}},
			wantPods:     1,
			wantLost:     1,
			wantFinding:  "has none, and the latest its Pods exited with is none",
		},
		"the last Pod lost with its node, no exit code: the exit code of the attempt before": {
			log: []string{
				event("create", "", 201, pod("x-1", "p1", "a1", corev1.PodPending, nil), 1),
				event("patch", "status", 200, pod("x-1", "p1", "a1", corev1.PodFailed, three), 3),
				event("create", "", 201, pod("x-2", "p2", "a1", corev1.PodPending, nil), 13),
				event("patch", "status", 200, lostWithItsNode(pod("x-2", "p2", "a1", corev1.PodFailed, nil)), 15),
			},
			incarnations: []Incarnation{{UID: "a1", Namespace: "chaos", Name: "x", BackoffLimit: 1, Alive: true, Phase: "Failed", Reason: "Disrupted", PodName: "x-2", ExitCode: three}},
			wantPods:     2,
		},
		"an init container failed: its exit code is the run's": {
			log: []string{
				event("create", "", 201, pod("x-1", "p1", "a1", corev1.PodPending, nil), 1),
				event("patch", "status", 200, func() corev1.Pod {
					p := pod("x-1", "p1", "a1", corev1.PodFailed, nil)
					p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "setup", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3}}}}
					return p
				}(), 3),
			},
			incarnations: []Incarnation{{UID: "a1", Namespace: "chaos", Name: "x", Alive: true, Phase: "Failed", Reason: "Error", PodName: "x-1", ExitCode: three}},
			wantPods:     1,
		},
		"refused past its deadline, Missed": {
			incarnations: []Incarnation{{UID: "a1", Namespace: "chaos", Name: "x", Deadline: true, Expect: "Missed", Alive: true, Phase: "Missed", Reason: "Missed"}},
		},
		"Missed without a deadline": {
			incarnations: []Incarnation{{UID: "a1", Namespace: "chaos", Name: "x", Alive: true, Phase: "Missed", Reason: "Missed"}},
			wantLost:     1,
			wantFinding:  "never ran its command (phase Missed",
		},
		"expected to miss its deadline, ran": {
			log: []string{
				event("create", "", 201, pod("x-1", "p1", "a1", corev1.PodPending, nil), 1),
				event("patch", "status", 200, pod("x-1", "p1", "a1", corev1.PodSucceeded, zero), 3),
			},
			incarnations: []Incarnation{func() Incarnation { i := succeeded("a1", "x-1"); i.Deadline, i.Expect = true, "Missed"; return i }()},
			wantPods:     1,
			wantLost:     1,
			wantFinding:  "the scenario expects Missed",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			v := Judge(tt.incarnations, read(g, tt.log...))
			want := Verdict{Ats: len(tt.incarnations), Pods: tt.wantPods, Duplicates: tt.wantDuplicates, Lost: tt.wantLost, Silent: tt.wantSilent, FalseSucceeded: tt.wantFalseSucceeded}
			g.Expect(v).To(BeComparableTo(want, cmpopts.IgnoreFields(Verdict{}, "Findings")), "findings:\n%s", strings.Join(v.Findings, "\n"))
			if tt.wantFinding != "" {
				g.Expect(v.Findings).To(ContainElement(ContainSubstring(tt.wantFinding)))
			}
			g.Expect(v.Failed()).To(Equal(tt.wantDuplicates+tt.wantLost+tt.wantSilent+tt.wantFalseSucceeded > 0))
			if tt.wantDuplicates+tt.wantLost+tt.wantSilent+tt.wantFalseSucceeded == 0 {
				g.Expect(v.Findings).To(BeEmpty())
			}
		})
	}
}

func TestObserveAddsWhatTheAuditLogMissed(t *testing.T) {
	g := NewWithT(t)
	rec := read(g, event("patch", "", 201, pod("x-1", "p1", "a1", corev1.PodPending, nil), 1))
	// p1 finished without its status write in the log; p2 was created
	// while the API server could not complete the response.
	p1 := pod("x-1", "p1", "a1", corev1.PodSucceeded, ptr.To[int32](0))
	p2 := pod("x-2", "p2", "a1", corev1.PodRunning, nil)
	p1.CreationTimestamp = metav1.NewTime(t0.Add(time.Second))
	p2.CreationTimestamp = metav1.NewTime(t0.Add(5 * time.Second))
	rec.Observe([]corev1.Pod{p1, p2})
	v := Judge([]Incarnation{succeeded("a1", "x-1")}, rec)
	g.Expect(v).To(BeComparableTo(Verdict{Ats: 1, Pods: 2, Duplicates: 1}, cmpopts.IgnoreFields(Verdict{}, "Findings")), "findings:\n%s", strings.Join(v.Findings, "\n"))
}

func TestReadAuditLines(t *testing.T) {
	g := NewWithT(t)
	good := event("patch", "", 201, pod("x-1", "p1", "a1", corev1.PodPending, nil), 1)
	_, err := ReadAudit(strings.NewReader(good+"\n"+good[:40]), func(string) bool { return true })
	g.Expect(err).NotTo(HaveOccurred(), "a truncated last line (the API server killed mid-write) must be skipped")
	_, err = ReadAudit(strings.NewReader(good[:40]+"\n"+good+"\n"), func(string) bool { return true })
	g.Expect(err).To(MatchError(ContainSubstring("audit log line 1")), "a broken line in the middle must be an error naming the line")
}

func TestLine(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Verdict{Ats: 200, Pods: 201, Duplicates: 1, Silent: 2, FalseSucceeded: 3}.Line("sigkill")).
		To(Equal("chaos sigkill: ats=200 pods=201 duplicates=1 lost=0 silent=2 falseSucceeded=3"))
}

func TestSilent(t *testing.T) {
	due := t0
	at := func(after time.Duration, phase, reason string, hasPod bool) Sample {
		return Sample{Time: due.Add(after), Phase: phase, Reason: reason, HasPod: hasPod}
	}
	tests := map[string]struct {
		samples []Sample
		silent  bool
	}{
		"no reason, no Pod, 20 s after its time": {samples: []Sample{at(20*time.Second, "Pending", "Scheduled", false)}, silent: true},
		"no status at all, 40 s after":           {samples: []Sample{at(40*time.Second, "", "", false)}, silent: true},
		"not yet 20 s after":                     {samples: []Sample{at(19*time.Second, "Pending", "Scheduled", false)}},
		"refused by a policy":                    {samples: []Sample{at(25*time.Second, "Pending", "PodForbidden", false)}},
		"refused by a webhook that is down":      {samples: []Sample{at(25*time.Second, "Pending", "PodCreateFailed", false)}},
		"its Pod's name taken":                   {samples: []Sample{at(25*time.Second, "Pending", "PodNameTaken", false)}},
		"its author may not create Pods":         {samples: []Sample{at(25*time.Second, "Pending", "AuthorForbidden", false)}},
		"missed its deadline":                    {samples: []Sample{at(25*time.Second, "Missed", "Missed", false)}},
		"a Pod, status not yet written":          {samples: []Sample{at(25*time.Second, "Pending", "Scheduled", true)}},
		"running, its retry refused":             {samples: []Sample{at(25*time.Second, "Running", "PodForbidden", false)}},
		"told, then silent":                      {samples: []Sample{at(21*time.Second, "Pending", "PodForbidden", false), at(24*time.Second, "Pending", "Scheduled", false)}, silent: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			inc := Incarnation{UID: "a1", Namespace: "chaos", Name: "x", Due: due, Samples: tt.samples}
			v := Judge([]Incarnation{inc}, Record{})
			want := 0
			if tt.silent {
				want = 1
			}
			g.Expect(v.Silent).To(Equal(want), "findings:\n%s", strings.Join(v.Findings, "\n"))
			if tt.silent {
				g.Expect(v.Findings).To(ContainElement(ContainSubstring("silent: At chaos/x (uid a1): ")))
			}
		})
	}
}

func TestUnstartedIsReadFromTheTerminalWrite(t *testing.T) {
	g := NewWithT(t)
	never := unstarted(pod("x-1", "p1", "a1", corev1.PodPending, nil))
	unscheduled := disrupted(pod("x-2", "p2", "a1", corev1.PodFailed, nil))
	unscheduled.Spec.NodeName = ""
	ran := disrupted(deletedWhileRunning(pod("x-3", "p3", "a1", corev1.PodFailed, ptr.To[int32](137))))
	byPodGC := unstarted(pod("x-4", "p4", "a1", corev1.PodPending, nil))
	byPodGC.Status.Conditions[0].Reason = "DeletionByPodGC"
	plain := pod("x-5", "p5", "a1", corev1.PodFailed, nil)
	rec := read(g,
		event("patch", "status", 200, never, 1),
		event("patch", "status", 200, unscheduled, 2),
		event("patch", "status", 200, ran, 3),
		event("patch", "status", 200, byPodGC, 4),
		event("patch", "status", 200, plain, 5),
	)
	got := map[string]bool{}
	for _, e := range rec.Ends {
		got[e.PodUID] = e.Unstarted
	}
	g.Expect(got).To(Equal(map[string]bool{
		"p1": true,  // its kubelet: no container ever started
		"p2": true,  // never scheduled
		"p3": false, // evicted while it ran
		"p4": false, // PodGC's word is not its kubelet's
		"p5": false, // not disrupted: a failure
	}))
}

func TestForcedDeletionIsReadFromTheTerminalWrite(t *testing.T) {
	g := NewWithT(t)
	forced := deletedWhileRunning(pod("x-1", "p1", "a1", corev1.PodFailed, ptr.To[int32](137)))
	forced.DeletionGracePeriodSeconds = ptr.To[int64](0)
	unscheduled := pod("x-2", "p2", "a1", corev1.PodFailed, nil)
	unscheduled.Spec.NodeName = ""
	unscheduled.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	unscheduled.DeletionGracePeriodSeconds = ptr.To[int64](0)
	rec := read(g,
		event("patch", "status", 200, forced, 1),
		event("patch", "status", 200, unscheduled, 2),
	)
	// Listed at the end only: deleted at once, perhaps after it ended.
	listed := forced
	listed.UID = "p3"
	rec.Observe([]corev1.Pod{listed})
	got := map[string]bool{}
	for _, e := range rec.Ends {
		got[e.PodUID] = e.Deleted
	}
	g.Expect(got).To(Equal(map[string]bool{
		"p1": true,  // deleted with grace period 0 while its command ran
		"p2": false, // deleted before its command started
		"p3": false, // no terminal write: which came first is not known
	}))
}

func TestADecoyIsNoAtsRun(t *testing.T) {
	g := NewWithT(t)
	decoy := pod("x-1", "p1", "a1", corev1.PodSucceeded, ptr.To[int32](0))
	decoy.OwnerReferences[0].APIVersion, decoy.OwnerReferences[0].Kind = "example.com/v1", "Decoy"
	other := pod("x-2", "p2", "a1", corev1.PodSucceeded, ptr.To[int32](0))
	other.OwnerReferences[0].Kind = "Schedule"
	own := pod("x-3", "p3", "a1", corev1.PodSucceeded, ptr.To[int32](0))
	var rec Record
	rec.Observe([]corev1.Pod{decoy, other, own})
	owners := map[string]string{}
	for _, c := range rec.Creates {
		owners[c.PodUID] = c.OwnerUID
	}
	g.Expect(owners).To(Equal(map[string]string{"p1": "", "p2": "", "p3": "a1"}))
}
