package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/hack/internal/cluster"
	"github.com/programming-kubernetes/cnat/internal/atpod"
	"github.com/programming-kubernetes/cnat/internal/lifecycle"
	"github.com/programming-kubernetes/cnat/test/testenv"
)

// Lives whose steps -apiserver-cost adds up.
const (
	lifeAt  = "At"
	lifeJob = "Job"
)

// measureFunc measures one step of -apiserver-cost: count objects, each
// written by do, the step counted in life's total if life is set.
type measureFunc func(step, life string, count int, do func(ctx context.Context, i int) error) error

// lifeCost replays, step by step on envtest's API server, every write the
// local cluster's API server takes over the whole life of n Ats that run
// once and succeed, and of n Jobs of the same Pod started as the job stage
// starts them, each write with the body its writer sends:
//
//   - an At: its create, the Pending status, the SubjectAccessReview that
//     asks whether its author may create Pods (the controller's guard, at
//     its time), its Pod (atpod.NewPod), the Pod's binding, the Running status, the kubelet's two status patches
//     (running, then exited 0), the outcome status, the release of the Pod
//     and cnat's Event, beside the scheduler's Event;
//   - a Job: its create (suspended), the Job controller's status update
//     that marks it suspended and its Event, the unsuspending patch, the
//     status update and Event of its resumption, its Pod (the Job
//     controller's: its labels and the job-tracking finalizer) and Event,
//     the binding, the kubelet's two patches, the Job controller's status
//     updates (the Pod active, its success counted as uncounted, then
//     counted and the Job complete), the finalizer's removal and the
//     Completed Event, beside the scheduler's.
//
// The statuses are cnat's own (lifecycle.Decide, applied as the
// controller's status field manager) and the Job controller's as its
// sources write them; the job stage's request table of a cluster run shows
// the same requests, which is what this replay must match. envtest has no
// webhooks: an At's admission (a dry-run Pod create and a
// SubjectAccessReview in the local cluster) is not in its life here.
func lifeCost(ctx context.Context, c *cluster.Clients, ns string, n int, measure measureFunc) error {
	if err := atLife(ctx, c, ns, n, measure); err != nil {
		return err
	}
	return jobLife(ctx, c, ns, n, measure)
}

// atLife replays the life of n Ats.
func atLife(ctx context.Context, c *cluster.Clients, ns string, n int, measure measureFunc) error {
	due := time.Now().Add(time.Hour).Truncate(time.Second)
	ats := make([]*cnatv1beta1.At, n)
	pods := make([]*corev1.Pod, n)
	steps := []struct {
		name string
		do   func(ctx context.Context, i int) error
	}{
		{"create", func(ctx context.Context, i int) error {
			ats[i] = benchAt(fmt.Sprintf("life-%06d", i), due)
			ats[i].Namespace = ns
			return c.Client.Create(ctx, ats[i])
		}},
		{"Pending status", func(ctx context.Context, i int) error {
			return writeDecided(ctx, c, ats[i], nil, time.Now())
		}},
		{"SubjectAccessReview (its author may create Pods)", func(ctx context.Context, i int) error {
			review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: "admin", Groups: []string{"system:masters", "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods"},
			}}
			_, err := c.Kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
			return err
		}},
		{"Pod create", func(ctx context.Context, i int) error {
			pod, err := c.Kube.CoreV1().Pods(ns).Create(ctx, atpod.NewPod(ats[i], 1, due, atpod.PodOptions{}), metav1.CreateOptions{})
			pods[i] = pod
			return err
		}},
		{"binding", func(ctx context.Context, i int) error { return bind(ctx, c, pods[i]) }},
		{"Running status", func(ctx context.Context, i int) error {
			return writeDecided(ctx, c, ats[i], pods[i], due)
		}},
		{"kubelet: running", func(ctx context.Context, i int) error {
			return kubeletStatus(ctx, c, pods[i], testenv.RunningStatus(pods[i], due))
		}},
		{"kubelet: exited 0", func(ctx context.Context, i int) error {
			return kubeletStatus(ctx, c, pods[i], testenv.TerminatedStatus(pods[i], 0, due.Add(time.Second)))
		}},
		{"outcome status", func(ctx context.Context, i int) error {
			return writeDecided(ctx, c, ats[i], pods[i], due.Add(2*time.Second))
		}},
		{"release", func(ctx context.Context, i int) error {
			patch := fmt.Sprintf(`{"metadata":{"uid":%q,"labels":{%q:"true"},"$deleteFromPrimitiveList/finalizers":[%q]}}`,
				pods[i].UID, cnatv1beta1.LabelReleased, cnatv1beta1.TrackingFinalizer)
			_, err := c.Kube.CoreV1().Pods(ns).Patch(ctx, pods[i].Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: cnatv1beta1.FieldManager})
			return err
		}},
		{"cnat's Event (Succeeded)", func(ctx context.Context, i int) error {
			return newEvent(ctx, c, ats[i].Namespace, cnatv1beta1.GroupVersion.String(), "At", ats[i].Name, ats[i].UID, cnatv1beta1.FieldManager, "Succeeded", ats[i].Status.Message)
		}},
		{"scheduler's Event", func(ctx context.Context, i int) error {
			return newEvent(ctx, c, ns, "v1", "Pod", pods[i].Name, pods[i].UID, "default-scheduler", "Scheduled", "Successfully assigned "+ns+"/"+pods[i].Name+" to node")
		}},
	}
	for _, s := range steps {
		if err := measure("At life: "+s.name, lifeAt, n, s.do); err != nil {
			return err
		}
	}
	return nil
}

// writeDecided writes the status lifecycle.Decide gives the At at now with
// its Pod (none: nil), as the controller's field manager, and keeps it as
// the At's status.
func writeDecided(ctx context.Context, c *cluster.Clients, at *cnatv1beta1.At, pod *corev1.Pod, now time.Time) error {
	var pods []corev1.Pod
	if pod != nil {
		pods = []corev1.Pod{*pod}
	}
	st := lifecycle.Decide(at, pods, now).Status
	if err := applyStatus(ctx, c.Client, at, st); err != nil {
		return err
	}
	at.Status = *st
	return nil
}

// bind binds the Pod to a node, as the scheduler does, and keeps the name.
func bind(ctx context.Context, c *cluster.Clients, pod *corev1.Pod) error {
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: "node-0"},
	}
	pod.Spec.NodeName = "node-0"
	return c.Kube.CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{})
}

// kubeletStatus patches the Pod's status as a kubelet reports it, and
// keeps it.
func kubeletStatus(ctx context.Context, c *cluster.Clients, pod *corev1.Pod, status corev1.PodStatus) error {
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	patched, err := c.Kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err == nil {
		*pod = *patched
	}
	return err
}

// newEvent creates an events.k8s.io/v1 Event about an object, as the
// scheduler and cnat's recorder send them.
func newEvent(ctx context.Context, c *cluster.Clients, ns, apiVersion, kind, name string, uid types.UID, reporter, reason, note string) error {
	now := metav1.NowMicro()
	e := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: eventName(name), Namespace: ns},
		EventTime:           now,
		ReportingController: reporter,
		ReportingInstance:   reporter + "-bench",
		Action:              "Binding",
		Reason:              reason,
		Regarding:           corev1.ObjectReference{APIVersion: apiVersion, Kind: kind, Name: name, Namespace: ns, UID: uid},
		Note:                note,
		Type:                corev1.EventTypeNormal,
	}
	_, err := c.Kube.EventsV1().Events(ns).Create(ctx, e, metav1.CreateOptions{})
	return err
}

// jobLife replays the life of n Jobs.
func jobLife(ctx context.Context, c *cluster.Clients, ns string, n int, measure measureFunc) error {
	jobs := make([]*batchv1.Job, n)
	pods := make([]*corev1.Pod, n)
	jobs2 := c.Kube.BatchV1().Jobs(ns)
	updateStatus := func(ctx context.Context, i int, change func(*batchv1.JobStatus)) error {
		change(&jobs[i].Status)
		updated, err := jobs2.UpdateStatus(ctx, jobs[i], metav1.UpdateOptions{})
		if err == nil {
			jobs[i] = updated
		}
		return err
	}
	coreEvent := func(ctx context.Context, i int, reason, message string) error {
		return newCoreEvent(ctx, c, jobs[i], reason, message)
	}
	resumed := make([]time.Time, n)
	steps := []struct {
		name string
		do   func(ctx context.Context, i int) error
	}{
		{"create, suspended", func(ctx context.Context, i int) error {
			job := &batchv1.Job{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("life-%06d", i), Namespace: ns},
				Spec: batchv1.JobSpec{
					Suspend:      ptr.To(true),
					BackoffLimit: ptr.To[int32](0),
					Template:     corev1.PodTemplateSpec{Spec: simulatedPodSpec()},
				},
			}
			var err error
			jobs[i], err = jobs2.Create(ctx, job, metav1.CreateOptions{})
			return err
		}},
		{"status: suspended", func(ctx context.Context, i int) error {
			return updateStatus(ctx, i, func(s *batchv1.JobStatus) {
				s.Conditions = append(s.Conditions, jobCondition(batchv1.JobSuspended, corev1.ConditionTrue, "JobSuspended", "Job suspended"))
			})
		}},
		{"Event Suspended", func(ctx context.Context, i int) error { return coreEvent(ctx, i, "Suspended", "Job suspended") }},
		{"unsuspend", func(ctx context.Context, i int) error {
			resumed[i] = time.Now()
			updated, err := jobs2.Patch(ctx, jobs[i].Name, types.MergePatchType, []byte(`{"spec":{"suspend":false}}`), metav1.PatchOptions{})
			if err == nil {
				jobs[i] = updated
			}
			return err
		}},
		{"status: resumed", func(ctx context.Context, i int) error {
			return updateStatus(ctx, i, func(s *batchv1.JobStatus) {
				s.Conditions[0] = jobCondition(batchv1.JobSuspended, corev1.ConditionFalse, "JobResumed", "Job resumed")
				s.StartTime = &metav1.Time{Time: resumed[i]}
				s.Ready = ptr.To[int32](0)
				s.Terminating = ptr.To[int32](0)
				s.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
			})
		}},
		{"Event Resumed", func(ctx context.Context, i int) error { return coreEvent(ctx, i, "Resumed", "Job resumed") }},
		{"Pod create", func(ctx context.Context, i int) error {
			pod, err := c.Kube.CoreV1().Pods(ns).Create(ctx, jobPod(jobs[i]), metav1.CreateOptions{})
			pods[i] = pod
			return err
		}},
		{"Event SuccessfulCreate", func(ctx context.Context, i int) error {
			return coreEvent(ctx, i, "SuccessfulCreate", "Created pod: "+pods[i].Name)
		}},
		{"status: active", func(ctx context.Context, i int) error {
			return updateStatus(ctx, i, func(s *batchv1.JobStatus) { s.Active = 1 })
		}},
		{"binding", func(ctx context.Context, i int) error { return bind(ctx, c, pods[i]) }},
		{"kubelet: running", func(ctx context.Context, i int) error {
			return kubeletStatus(ctx, c, pods[i], testenv.RunningStatus(pods[i], resumed[i]))
		}},
		{"kubelet: exited 0", func(ctx context.Context, i int) error {
			return kubeletStatus(ctx, c, pods[i], testenv.TerminatedStatus(pods[i], 0, resumed[i].Add(time.Second)))
		}},
		{"status: success uncounted", func(ctx context.Context, i int) error {
			return updateStatus(ctx, i, func(s *batchv1.JobStatus) {
				s.Active = 0
				s.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{Succeeded: []types.UID{pods[i].UID}}
			})
		}},
		{"finalizer removal", func(ctx context.Context, i int) error {
			patch := fmt.Sprintf(`{"metadata":{"$deleteFromPrimitiveList/finalizers":[%q]}}`, batchv1.JobTrackingFinalizer)
			_, err := c.Kube.CoreV1().Pods(ns).Patch(ctx, pods[i].Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
			return err
		}},
		{"status: complete", func(ctx context.Context, i int) error {
			return updateStatus(ctx, i, func(s *batchv1.JobStatus) {
				s.Succeeded = 1
				s.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
				s.CompletionTime = ptr.To(metav1.Now())
				s.Conditions = append(s.Conditions,
					jobCondition(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue, batchv1.JobReasonCompletionsReached, "Reached expected number of succeeded pods"),
					jobCondition(batchv1.JobComplete, corev1.ConditionTrue, batchv1.JobReasonCompletionsReached, "Reached expected number of succeeded pods"))
			})
		}},
		{"Event Completed", func(ctx context.Context, i int) error { return coreEvent(ctx, i, "Completed", "Job completed") }},
		{"scheduler's Event", func(ctx context.Context, i int) error {
			return newEvent(ctx, c, ns, "v1", "Pod", pods[i].Name, pods[i].UID, "default-scheduler", "Scheduled", "Successfully assigned "+ns+"/"+pods[i].Name+" to node")
		}},
	}
	for _, s := range steps {
		if err := measure("Job life: "+s.name, lifeJob, n, s.do); err != nil {
			return err
		}
	}
	return nil
}

// jobCondition is a Job condition as the Job controller writes it.
func jobCondition(t batchv1.JobConditionType, status corev1.ConditionStatus, reason, message string) batchv1.JobCondition {
	now := metav1.Now()
	return batchv1.JobCondition{Type: t, Status: status, LastProbeTime: now, LastTransitionTime: now, Reason: reason, Message: message}
}

// jobPod is the Pod the Job controller creates for a Job: its template with
// the Job's labels, a controller owner reference and the job-tracking
// finalizer, named after the Job.
func jobPod(job *batchv1.Job) *corev1.Pod {
	labels := map[string]string{
		batchv1.ControllerUidLabel: string(job.UID),
		batchv1.JobNameLabel:       job.Name,
		"controller-uid":           string(job.UID),
		"job-name":                 job.Name,
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: job.Name + "-",
			Namespace:    job.Namespace,
			Labels:       labels,
			Finalizers:   []string{batchv1.JobTrackingFinalizer},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: *job.Spec.Template.Spec.DeepCopy(),
	}
}

// newCoreEvent creates a core/v1 Event about a Job, as the Job
// controller's recorder sends it.
func newCoreEvent(ctx context.Context, c *cluster.Clients, job *batchv1.Job, reason, message string) error {
	now := metav1.Now()
	e := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: eventName(job.Name), Namespace: job.Namespace},
		InvolvedObject: corev1.ObjectReference{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, Namespace: job.Namespace, UID: job.UID, ResourceVersion: job.ResourceVersion},
		Reason:         reason,
		Message:        message,
		Source:         corev1.EventSource{Component: "job-controller"},
		FirstTimestamp: now,
		LastTimestamp:  now,
		Count:          1,
		Type:           corev1.EventTypeNormal,
	}
	_, err := c.Kube.CoreV1().Events(job.Namespace).Create(ctx, e, metav1.CreateOptions{})
	return err
}

// eventName names an Event about the object called name as the recorders
// do: the name, a dot and the time in hexadecimal nanoseconds.
func eventName(name string) string {
	return fmt.Sprintf("%s.%x", name, time.Now().UnixNano())
}
