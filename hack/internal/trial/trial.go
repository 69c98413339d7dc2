// Package trial is one run of Ats that the harness judges, in a namespace
// of its own: chaos's scenarios and the upgrade create their Ats through
// it, sample how they stand while they are due, let them settle and judge
// them from the API server's audit log and the objects it holds at the end
// (package judge).
package trial

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cnatv1alpha1 "github.com/programming-kubernetes/cnat/api/v1alpha1"
	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/hack/internal/cluster"
	"github.com/programming-kubernetes/cnat/hack/internal/judge"
	"github.com/programming-kubernetes/cnat/hack/internal/poll"
)

// Trial records what a run created and saw.
type Trial struct {
	// Namespace is the run's.
	Namespace string
	c         client.Client

	mu      sync.Mutex
	created []judge.Incarnation
	// refused are names of Ats whose create the API server refused.
	refused []string
	// samples are how each At (by UID) stood while the run went on.
	samples map[string][]judge.Sample
}

// Start creates the namespace and waits for its default ServiceAccount
// (cluster.CreateNamespace).
func Start(ctx context.Context, c client.Client, namespace string) (*Trial, error) {
	if err := cluster.CreateNamespace(ctx, c, namespace, nil); err != nil {
		return nil, err
	}
	return &Trial{Namespace: namespace, c: c, samples: map[string][]judge.Sample{}}, nil
}

// AtSpec is what a run asks of an At whose Pods run on the simulated nodes.
type AtSpec struct {
	// At is when it fires.
	At time.Time
	// Command is the shell line it runs.
	Command string
	// Duration is how long its Pod runs (simulated), as a Go duration.
	Duration string
	// StartDelay is how long its Pod stays Pending on its node before it
	// starts (simulated), as a Go duration ("": at once).
	StartDelay string
	// ExitCode is its Pod's (simulated) exit code.
	ExitCode int
	// BackoffLimit is its spec.backoffLimit.
	BackoffLimit int32
	// Labels go on its Pod template.
	Labels map[string]string
	// CPU is its container's CPU request ("": none).
	CPU string
	// Deadline is its spec.startingDeadlineSeconds (0: none).
	Deadline int64
	// Expect is the phase the run knows it must end in ("": whatever its
	// Pods say).
	Expect string
}

// CreateAt creates the At name of spec s through the API version given
// (v1beta1 or v1alpha1) and records it (create).
func (t *Trial) CreateAt(ctx context.Context, name, version string, s AtSpec) error {
	return t.CreateAtAs(ctx, t.c, name, version, s)
}

// CreateAtAs is CreateAt as the user of the client c (an impersonating
// client): the At's author.
func (t *Trial) CreateAtAs(ctx context.Context, c client.Client, name, version string, s AtSpec) error {
	var deadline *int64
	if s.Deadline > 0 {
		deadline = ptr.To(s.Deadline)
	}
	container := corev1.Container{Name: "command"}
	if s.CPU != "" {
		container.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(s.CPU)}
	}
	var at client.Object = &cnatv1beta1.At{
		ObjectMeta: metav1.ObjectMeta{Namespace: t.Namespace, Name: name},
		Spec: cnatv1beta1.AtSpec{
			StartingDeadlineSeconds: deadline,
			Schedule:                s.At.UTC().Format(time.RFC3339),
			Command:                 s.Command,
			BackoffLimit:            ptr.To(s.BackoffLimit),
			Template: &corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels: s.Labels,
					Annotations: map[string]string{
						cluster.AnnotationDuration:   s.Duration,
						cluster.AnnotationExitCode:   fmt.Sprint(s.ExitCode),
						cluster.AnnotationStartDelay: s.StartDelay,
					},
				},
				Spec: cluster.Simulated(corev1.PodSpec{Containers: []corev1.Container{container}}),
			},
		},
	}
	switch version {
	case cnatv1beta1.GroupVersion.Version:
	case cnatv1alpha1.GroupVersion.Version:
		alpha := &cnatv1alpha1.At{}
		if err := alpha.ConvertFrom(at.(*cnatv1beta1.At)); err != nil {
			return err
		}
		at = alpha
	default:
		return fmt.Errorf("creating At %s: API version %q is neither %s nor %s", name, version, cnatv1beta1.GroupVersion.Version, cnatv1alpha1.GroupVersion.Version)
	}
	return t.create(ctx, c, at, judge.Incarnation{
		BackoffLimit: s.BackoffLimit, Due: s.At.Truncate(time.Second), Deadline: s.Deadline > 0, Expect: s.Expect,
	})
}

// create creates at (an At of either version) as the user of c and
// records it as the incarnation inc, whose UID it fills in; a refusal is
// recorded and returned.
func (t *Trial) create(ctx context.Context, c client.Client, at client.Object, inc judge.Incarnation) error {
	err := c.Create(ctx, at)
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil && ctx.Err() != nil {
		// Cancelled: whether the API server admitted it is not known.
		return err
	}
	if err != nil {
		t.refused = append(t.refused, at.GetName())
		gvk, _ := t.c.GroupVersionKindFor(at)
		return fmt.Errorf("creating At %s/%s (%s): %w", at.GetNamespace(), at.GetName(), gvk.Version, err)
	}
	inc.UID, inc.Namespace, inc.Name = string(at.GetUID()), at.GetNamespace(), at.GetName()
	t.created = append(t.created, inc)
	return nil
}

// Created are the incarnations created so far.
func (t *Trial) Created() []judge.Incarnation {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.created)
}

// Refused is how many creates the API server refused so far.
func (t *Trial) Refused() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.refused)
}

// Sample records, every interval until the returned stop is called, how
// each At of the namespace stands: its phase and reason, and whether a Pod
// of its own exists. The Ats are listed first, then the Pods, so a Pod the
// At had when it was listed is in the Pod list (it carries the tracking
// finalizer until its run is recorded). The judge counts an At past its
// time by judge.SilentAfter with no Pod and no reason that says why as
// silent.
func (t *Trial) Sample(ctx context.Context, interval time.Duration) (stop func()) {
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait.UntilWithContext(sctx, t.sampleOnce, interval)
	}()
	return func() { cancel(); <-done }
}

func (t *Trial) sampleOnce(ctx context.Context) {
	now := time.Now()
	var ats cnatv1beta1.AtList
	var pods metav1.PartialObjectMetadataList
	pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if t.c.List(ctx, &ats, client.InNamespace(t.Namespace)) != nil || t.c.List(ctx, &pods, client.InNamespace(t.Namespace)) != nil {
		return
	}
	hasPod := map[types.UID]bool{}
	for i := range pods.Items {
		if ref := judge.RunOwner(&pods.Items[i]); ref != nil {
			hasPod[ref.UID] = true
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, at := range ats.Items {
		t.samples[string(at.UID)] = append(t.samples[string(at.UID)], judge.Sample{
			Time: now, Phase: string(at.Status.Phase), Reason: at.Status.Reason, HasPod: hasPod[at.UID],
		})
	}
}

// Settle waits until every At of the namespace is finished, for at most
// timeout, and returns how many are not; what is not finished then is
// judged lost. It returns an error when the Ats cannot be listed at all
// (cnat's CRD is gone), or not at the end.
func (t *Trial) Settle(ctx context.Context, timeout time.Duration) (pending int, err error) {
	var listErr error
	// The Ats are listed with ctx: a list cut short by the timeout is no
	// answer.
	err = poll.Until(ctx, time.Second, timeout, func(context.Context) (bool, error) {
		var ats cnatv1beta1.AtList
		if listErr = t.c.List(ctx, &ats, client.InNamespace(t.Namespace)); listErr != nil {
			if apierrors.IsNotFound(listErr) || meta.IsNoMatchError(listErr) {
				return false, fmt.Errorf("listing the Ats: %w", listErr)
			}
			return false, nil
		}
		pending = 0
		for _, at := range ats.Items {
			if !at.Status.Phase.Finished() {
				pending++
			}
		}
		return pending == 0, nil
	}, func() error {
		if listErr != nil {
			return fmt.Errorf("listing the Ats: %w", listErr)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return pending, nil
}

// Judge judges the run (judge.Judge) on the audit log at auditLog (its
// files rotated before since hold nothing of the run), the Pods and the Ats
// the API server holds now, and returns what the audit log showed and the
// names of the Ats created and gone. An At whose create was refused must
// not exist (nothing half-applied), unless a later create of its name was
// admitted: if it does, it is lost.
func (t *Trial) Judge(ctx context.Context, auditLog string, since time.Time) (judge.Verdict, judge.Record, []string, error) {
	rec, err := judge.ReadAuditFiles(auditLog, since, func(ns string) bool { return ns == t.Namespace })
	if err != nil {
		return judge.Verdict{}, judge.Record{}, nil, err
	}
	var pods corev1.PodList
	if err := t.c.List(ctx, &pods, client.InNamespace(t.Namespace)); err != nil {
		return judge.Verdict{}, judge.Record{}, nil, fmt.Errorf("listing the Pods: %w", err)
	}
	rec.Observe(pods.Items)
	var ats cnatv1beta1.AtList
	// After an uninstall there is no At, and no kind At.
	if err := t.c.List(ctx, &ats, client.InNamespace(t.Namespace)); err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
		return judge.Verdict{}, judge.Record{}, nil, fmt.Errorf("listing the Ats: %w", err)
	}
	t.mu.Lock()
	incarnations, gone := judge.Settle(t.created, t.samples, ats.Items)
	refused := t.refused
	t.mu.Unlock()
	v := judge.Judge(incarnations, rec)

	for _, name := range refused {
		if slices.ContainsFunc(incarnations, func(inc judge.Incarnation) bool { return inc.Name == name }) {
			continue // a later create of its name was admitted
		}
		err := t.c.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: name}, &cnatv1beta1.At{})
		if !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
			v.Lost++
			v.Findings = append(v.Findings, fmt.Sprintf("lost: At %s/%s: its create was refused, yet it exists (%v)", t.Namespace, name, err))
		}
	}
	return v, rec, gone, nil
}

// WriteFindings writes findings to path, one a line, and prints the first
// show of them.
func WriteFindings(path string, findings []string, show int) error {
	if err := os.WriteFile(path, []byte(strings.Join(findings, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	for i, f := range findings {
		if i == show {
			fmt.Printf("  ... %d more in %s\n", len(findings)-i, path)
			break
		}
		fmt.Println("  " + f)
	}
	return nil
}
