// Package judge is the harness's one vocabulary for whether cnat kept its
// promises: every At incarnation runs its command at most once per attempt
// it may make, and every incarnation that is still there at the end says
// truthfully how its own run went. Judge decides it for a chaos scenario or
// an upgrade from what the API server recorded; Count, in the same Verdict,
// for the bench's units from what its informers saw.
//
// The evidence is the kube-apiserver's audit log (ReadAudit: every Pod the
// API server created, with the Pod as stored, and every Pod status write)
// completed by a final list of the Pods (Record.Observe), and the Ats as the
// API server holds them at the end. Nothing the controller says about itself
// (its logs, metrics or Events) is used. It is pure: no client, no clock.
package judge

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// PodCreate is one Pod the API server created.
type PodCreate struct {
	// PodUID is the UID the API server gave the Pod.
	PodUID string
	// Namespace and Name of the Pod.
	Namespace, Name string
	// OwnerUID and OwnerName are the UID and name of the Pod's controller
	// owner reference when it names an At (RunOwner); empty otherwise: a
	// Pod a co-tenant made with an At's UID under another kind is never
	// that At's run.
	OwnerUID, OwnerName string
	// Time is when the API server received the request that created it.
	Time time.Time
}

// PodEnd is a Pod status write that put the Pod in a terminal phase.
type PodEnd struct {
	// PodUID is the Pod's UID.
	PodUID string
	// Phase is Succeeded or Failed.
	Phase corev1.PodPhase
	// ExitCode is the exit code of the Pod's first container, if it had
	// terminated.
	ExitCode *int32
	// Time is when the API server received the status write.
	Time time.Time
	// Deleted is set when the Pod was deleted while it ran: the Pod that
	// reached its terminal phase already had a deletion timestamp with a
	// grace period (the API server deletes a finished Pod at once), or,
	// read from the terminal status write itself, a deletion timestamp of
	// any grace period (--force, grace period 0) on a Pod whose command had
	// started. Its run was interrupted, whatever it exited with, and is
	// never re-run.
	Deleted bool
	// Disrupted is set when the Pod carried the DisruptionTarget condition
	// when it ended: an eviction, a preemption, PodGC.
	Disrupted bool
	// Unstarted is set when the Pod was disrupted before its command could
	// start: never scheduled, or ended Failed by its kubelet with no
	// container ever started (not by PodGC, whose word is not its
	// kubelet's). Such an attempt does not count against backoffLimit.
	Unstarted bool
}

// Record is what the API server did to Pods during a run.
type Record struct {
	Creates []PodCreate
	Ends    []PodEnd
	// AtStatusWrites are the writes of an At's status the API server
	// accepted.
	AtStatusWrites []AtStatusWrite
	// Began is set when the log holds the create of the run's namespace
	// (a namespace for which inNamespace is true): the log reaches back to
	// the run's start, so no Pod of the run can be missing from it.
	Began bool
}

// AtStatusWrite is a write of an At's status the API server accepted.
type AtStatusWrite struct {
	// Namespace and Name of the At.
	Namespace, Name string
	// Time is when the API server received the write.
	Time time.Time
}

// atGroup is the API group of the At.
const atGroup = "cnat.programming-kubernetes.info"

// auditEvent holds the fields of an audit.k8s.io/v1 Event the judge reads.
type auditEvent struct {
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		Subresource string `json:"subresource"`
		APIGroup    string `json:"apiGroup"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	ResponseObject           json.RawMessage  `json:"responseObject"`
	RequestReceivedTimestamp metav1.MicroTime `json:"requestReceivedTimestamp"`
}

// ReadAudit reads an audit log (one JSON event per line, as kube-apiserver's
// --audit-log-path writes it) and returns the Pod creates and terminal Pod
// status writes of the namespaces for which inNamespace is true. A create is
// a POST or a server-side apply PATCH answered 201 Created, so a Pod created
// by apply counts as well as one created by create. Lines that are not
// events of interest are skipped; a line that is not JSON is an error, but a
// truncated last line (the API server killed mid-write) is not.
func ReadAudit(r io.Reader, inNamespace func(string) bool) (Record, error) {
	var rec Record
	// seen are the Pods other events show as stored (a status write answers
	// with the Pod): a create the API server answered with an error, such as
	// a 504 timeout after etcd had committed it, still made the Pod. They
	// count as created at their creationTimestamp unless their create was
	// recorded.
	seen := map[string]PodCreate{}
	// started are the Pods a status write showed started (showsStart).
	started := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	line := 0
	var pendingErr error
	for sc.Scan() {
		line++
		if pendingErr != nil {
			return Record{}, pendingErr
		}
		raw := sc.Bytes()
		if len(raw) == 0 {
			continue
		}
		var ev auditEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			// Tolerated only if it is the last line.
			pendingErr = fmt.Errorf("audit log line %d: %w", line, err)
			continue
		}
		if ev.Stage != "ResponseComplete" || ev.ObjectRef == nil || ev.ResponseStatus == nil {
			continue
		}
		ref, code, t := ev.ObjectRef, ev.ResponseStatus.Code, ev.RequestReceivedTimestamp.Time
		switch {
		case ref.APIGroup == "" && ref.Resource == "namespaces" && ev.Verb == "create" && code == 201 && inNamespace(ref.Name):
			rec.Began = true
		case ref.APIGroup == atGroup && ref.Resource == "ats" && ref.Subresource == "status" && code == 200 && inNamespace(ref.Namespace):
			rec.AtStatusWrites = append(rec.AtStatusWrites, AtStatusWrite{Namespace: ref.Namespace, Name: ref.Name, Time: t})
		case ref.APIGroup != "" || ref.Resource != "pods" || !inNamespace(ref.Namespace) || len(ev.ResponseObject) == 0:
			// Not a Pod of the run's, or no Pod in the answer.
		case ref.Subresource == "" && code == 201 && (ev.Verb == "create" || ev.Verb == "patch"):
			var pod corev1.Pod
			if err := json.Unmarshal(ev.ResponseObject, &pod); err != nil {
				return Record{}, fmt.Errorf("audit log line %d: the created Pod: %w", line, err)
			}
			rec.Creates = append(rec.Creates, createOf(&pod, t))
		case ref.Subresource == "status" && code == 200:
			var pod corev1.Pod
			if err := json.Unmarshal(ev.ResponseObject, &pod); err != nil {
				return Record{}, fmt.Errorf("audit log line %d: the Pod's status: %w", line, err)
			}
			if showsStart(&pod) {
				started[string(pod.UID)] = true
			}
			if end, ok := endOf(&pod, t); ok {
				rec.Ends = append(rec.Ends, end)
			}
			if _, ok := seen[string(pod.UID)]; !ok {
				seen[string(pod.UID)] = createOf(&pod, pod.CreationTimestamp.Time)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return Record{}, fmt.Errorf("reading the audit log: %w", err)
	}
	for i := range rec.Ends {
		if started[rec.Ends[i].PodUID] {
			rec.Ends[i].Unstarted = false
		}
	}
	created := map[string]bool{}
	for _, c := range rec.Creates {
		created[c.PodUID] = true
	}
	for uid, c := range seen {
		if !created[uid] {
			rec.Creates = append(rec.Creates, c)
		}
	}
	sortCreates(rec.Creates)
	return rec, nil
}

// Observe adds what a list of Pods at the end of a run shows and the audit
// log missed (a create whose response the API server never completed because
// etcd went away after committing it): Pods whose UID no recorded create has,
// created at their creationTimestamp, and terminal phases no recorded status
// write has.
func (r *Record) Observe(pods []corev1.Pod) {
	created := map[string]bool{}
	for _, c := range r.Creates {
		created[c.PodUID] = true
	}
	ended := map[string]bool{}
	for _, e := range r.Ends {
		ended[e.PodUID] = true
	}
	for i := range pods {
		pod := &pods[i]
		if !created[string(pod.UID)] {
			r.Creates = append(r.Creates, createOf(pod, pod.CreationTimestamp.Time))
		}
		if !ended[string(pod.UID)] {
			// The time is unknown: after the create, before the end of the run.
			if end, ok := endOf(pod, time.Time{}); ok {
				r.Ends = append(r.Ends, end)
			}
		}
	}
}

func createOf(pod *corev1.Pod, t time.Time) PodCreate {
	c := PodCreate{PodUID: string(pod.UID), Namespace: pod.Namespace, Name: pod.Name, Time: t}
	if ref := RunOwner(pod); ref != nil {
		c.OwnerUID, c.OwnerName = string(ref.UID), ref.Name
	}
	return c
}

// RunOwner is the Pod's controller owner reference if it names an At (kind
// At, group cnat.programming-kubernetes.info, any version), else nil: only
// then can the Pod be an At's run.
func RunOwner(pod metav1.Object) *metav1.OwnerReference {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || ref.Kind != "At" {
		return nil
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != atGroup {
		return nil
	}
	return ref
}

func endOf(pod *corev1.Pod, t time.Time) (PodEnd, bool) {
	if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
		return PodEnd{}, false
	}
	end := PodEnd{PodUID: string(pod.UID), Phase: pod.Status.Phase, Time: t}
	// A Pod listed at the end (t zero) may have been deleted at once after
	// it ended; its terminal status write shows what came first.
	graceful := pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds > 0
	end.Deleted = pod.DeletionTimestamp != nil && (graceful || !t.IsZero() && showsStart(pod))
	var disruption *corev1.PodCondition
	for i, c := range pod.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			disruption = &pod.Status.Conditions[i]
		}
	}
	end.Disrupted = disruption != nil
	end.Unstarted = disruption != nil && neverStarted(pod, disruption.Reason)
	// The exit code of a Pod's command: an init container's that failed
	// (the command never ran), else its first container's.
	for _, s := range pod.Status.InitContainerStatuses {
		if t := s.State.Terminated; t != nil && t.ExitCode != 0 {
			code := t.ExitCode
			end.ExitCode = &code
			return end, true
		}
	}
	if len(pod.Spec.Containers) > 0 {
		for _, s := range pod.Status.ContainerStatuses {
			if s.Name == pod.Spec.Containers[0].Name && s.State.Terminated != nil {
				code := s.State.Terminated.ExitCode
				end.ExitCode = &code
			}
		}
	}
	return end, true
}

// neverStarted reports whether a disrupted Pod's command certainly never
// started, from its terminal status write: it was never scheduled, or its
// kubelet ended it Failed without having acknowledged it (no startTime)
// and with no container running or terminated after a start. ReadAudit
// also clears Unstarted for a Pod any other status write of which showed a
// start (showsStart): a container the kubelet lost after it ran ends
// terminated with no start time.
func neverStarted(pod *corev1.Pod, disruptionReason string) bool {
	if pod.Status.Phase == corev1.PodSucceeded {
		return false
	}
	if pod.Spec.NodeName == "" {
		return true
	}
	if pod.Status.Phase != corev1.PodFailed || disruptionReason == "DeletionByPodGC" {
		return false
	}
	return !showsStart(pod)
}

// showsStart reports whether this state of the Pod shows that its kubelet
// acknowledged it or that a container of it started.
func showsStart(pod *corev1.Pod) bool {
	if pod.Status.StartTime != nil || pod.Status.Phase == corev1.PodRunning || pod.Status.Phase == corev1.PodSucceeded {
		return true
	}
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, cs := range statuses {
			for _, state := range []corev1.ContainerState{cs.State, cs.LastTerminationState} {
				if state.Running != nil || state.Terminated != nil && !state.Terminated.StartedAt.IsZero() {
					return true
				}
			}
		}
	}
	return false
}

// sortCreates orders creates by the time the API server received them.
func sortCreates(cs []PodCreate) {
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].Time.Before(cs[j].Time) })
}
