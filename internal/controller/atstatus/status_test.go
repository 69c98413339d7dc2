package atstatus_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	atac "github.com/programming-kubernetes/cnat/api/applyconfiguration/api/v1beta1"
	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/controller/atstatus"
)

// statusApply is one status apply request as the client received it.
type statusApply struct {
	Subresource  string
	Object       runtime.ApplyConfiguration
	FieldManager string
	Force        *bool
}

// TestStatus checks what Status sends, and when it sends nothing, against
// an At whose managed fields are as the API server records a status apply
// (the controller's envtest suite applies to a real one).
func TestStatus(t *testing.T) {
	started := time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)
	running := func() *cnatv1beta1.AtStatus {
		return &cnatv1beta1.AtStatus{Phase: cnatv1beta1.PhaseRunning, Attempts: 1, PodName: "hello-7f3c1a52-1", StartTime: &metav1.Time{Time: started}}
	}
	// live is the At at resourceVersion 7, its status as running() applied
	// by manager.
	live := func(manager string) *cnatv1beta1.At {
		at := newAt()
		at.ResourceVersion = "7"
		at.Status = *running()
		at.ManagedFields = []metav1.ManagedFieldsEntry{{
			Manager:     manager,
			Operation:   metav1.ManagedFieldsOperationApply,
			APIVersion:  cnatv1beta1.GroupVersion.String(),
			FieldsType:  "FieldsV1",
			Subresource: "status",
			FieldsV1:    metav1.NewFieldsV1(`{"f:status":{"f:attempts":{},"f:phase":{},"f:podName":{},"f:startTime":{}}}`),
		}}
		return at
	}
	succeeded := func() *cnatv1beta1.AtStatus {
		s := running()
		s.Phase, s.ExitCode = cnatv1beta1.PhaseSucceeded, new(int32)
		return s
	}
	// sent is the request that applies succeeded() over live.
	sent := statusApply{
		Subresource: "status",
		Object: atac.At(atName, atNamespace).WithResourceVersion("7").WithStatus(atac.AtStatus().
			WithPhase(cnatv1beta1.PhaseSucceeded).WithAttempts(1).WithPodName("hello-7f3c1a52-1").
			WithStartTime(metav1.Time{Time: started}).WithExitCode(0)),
		FieldManager: atstatus.StatusFieldManager,
		Force:        ptr.To(true),
	}
	// reset is live after its managed fields were reset and the API server
	// gave them to before-first-apply on the next apply, which owns the
	// same fields: the manager no longer owns exitCode alone.
	reset := func() *cnatv1beta1.At {
		at := live(atstatus.StatusFieldManager)
		at.Status = *succeeded()
		at.ManagedFields[0].FieldsV1 = metav1.NewFieldsV1(`{"f:status":{"f:attempts":{},"f:exitCode":{},"f:phase":{},"f:podName":{},"f:startTime":{}}}`)
		at.ManagedFields = append(at.ManagedFields, metav1.ManagedFieldsEntry{
			Manager: "before-first-apply", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: cnatv1beta1.GroupVersion.String(),
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:attempts":{},"f:exitCode":{},"f:phase":{},"f:podName":{},"f:startTime":{}}}`),
		})
		return at
	}
	// failed drops exitCode, which neither apply may remove after reset.
	failed := func() *cnatv1beta1.AtStatus {
		s := running()
		s.Phase = cnatv1beta1.PhaseFailed
		return s
	}
	conflict := apierrors.NewConflict(schema.GroupResource{Group: cnatv1beta1.GroupVersion.Group, Resource: "ats"}, atName, nil)

	tests := []struct {
		name     string
		at       *cnatv1beta1.At
		status   *cnatv1beta1.AtStatus
		refusal  error
		want     []statusApply
		wantErr  error
		wantSent bool
		// wantUpdate is the status written whole by an update.
		wantUpdate *cnatv1beta1.AtStatus
	}{
		{
			name: "the first status of an At: applied",
			at: func() *cnatv1beta1.At {
				at := newAt()
				at.ResourceVersion = "7"
				return at
			}(),
			status: running(), wantSent: true,
			want: []statusApply{{
				Subresource: "status",
				Object: atac.At(atName, atNamespace).WithResourceVersion("7").WithStatus(atac.AtStatus().
					WithPhase(cnatv1beta1.PhaseRunning).WithAttempts(1).WithPodName("hello-7f3c1a52-1").
					WithStartTime(metav1.Time{Time: started})),
				FieldManager: atstatus.StatusFieldManager,
				Force:        ptr.To(true),
			}},
		},
		{
			name: "a field the manager no longer owns alone, left out: the status is updated whole",
			at:   reset(), status: failed(), wantSent: true, wantUpdate: failed(),
		},
		{
			name: "a field another manager owns too, set again: applied",
			at:   reset(), status: func() *cnatv1beta1.AtStatus { s := succeeded(); s.Attempts = 2; return s }(), wantSent: true,
			want: []statusApply{{
				Subresource: "status",
				Object: atac.At(atName, atNamespace).WithResourceVersion("7").WithStatus(atac.AtStatus().
					WithPhase(cnatv1beta1.PhaseSucceeded).WithAttempts(2).WithPodName("hello-7f3c1a52-1").
					WithStartTime(metav1.Time{Time: started}).WithExitCode(0)),
				FieldManager: atstatus.StatusFieldManager,
				Force:        ptr.To(true),
			}},
		},
		{name: "the status the manager owns: nothing sent", at: live(atstatus.StatusFieldManager), status: running()},
		{
			name: "a field the manager's own entry owns alone, left out: applied (the apply removes it)",
			at: func() *cnatv1beta1.At {
				at := reset()
				at.ManagedFields = at.ManagedFields[:1]
				return at
			}(),
			status: failed(), wantSent: true,
			want: []statusApply{{
				Subresource: "status",
				Object: atac.At(atName, atNamespace).WithResourceVersion("7").WithStatus(atac.AtStatus().
					WithPhase(cnatv1beta1.PhaseFailed).WithAttempts(1).WithPodName("hello-7f3c1a52-1").
					WithStartTime(metav1.Time{Time: started})),
				FieldManager: atstatus.StatusFieldManager,
				Force:        ptr.To(true),
			}},
		},
		{
			// Its entry rewritten by someone who may patch the At to claim
			// less than the live status holds: what it claims equals the new
			// status, the live status does not.
			name: "a status the forged entry claims, but not the At's: written whole",
			at: func() *cnatv1beta1.At {
				at := reset()
				at.ManagedFields = at.ManagedFields[:1]
				at.ManagedFields[0].FieldsV1 = metav1.NewFieldsV1(`{"f:status":{"f:attempts":{},"f:phase":{},"f:podName":{},"f:startTime":{}}}`)
				at.Status.Phase = cnatv1beta1.PhaseFailed
				return at
			}(),
			status: failed(), wantSent: true, wantUpdate: failed(),
		},
		{
			name: "a changed status: applied over the At it was decided on, owning its fields by force",
			at:   live(atstatus.StatusFieldManager), status: succeeded(), want: []statusApply{sent}, wantSent: true,
		},
		{
			// Equal to the At's status: nothing to change, whoever owns it.
			// The managed fields are not trusted for that (anyone who may
			// patch the At writes them); a later change the apply could not
			// make whole is written whole (leftBehind).
			name: "the same status, owned by another manager: nothing sent",
			at:   live("kubectl"), status: running(), wantSent: false,
		},
		{
			name: "refused: the error is returned",
			at:   live(atstatus.StatusFieldManager), status: succeeded(), refusal: conflict,
			want: []statusApply{sent}, wantErr: conflict,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var got []statusApply
			var updated *cnatv1beta1.AtStatus
			c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(newScheme(g)).Build(), interceptor.Funcs{
				SubResourceApply: func(_ context.Context, _ client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
					o := &client.SubResourceApplyOptions{}
					o.ApplyOpts(opts)
					got = append(got, statusApply{Subresource: sub, Object: obj, FieldManager: o.FieldManager, Force: o.Force})
					return tc.refusal
				},
				SubResourceUpdate: func(_ context.Context, _ client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
					o := &client.SubResourceUpdateOptions{}
					o.ApplyOptions(opts)
					g.Expect(sub).To(Equal("status"))
					g.Expect(o.FieldManager).To(Equal(atstatus.StatusFieldManager))
					g.Expect(obj.GetResourceVersion()).To(Equal("7"), "updated on the At it was decided on")
					updated = &obj.(*cnatv1beta1.At).Status
					return nil
				},
			})
			before := tc.at.DeepCopy()
			written, err := atstatus.Status(context.Background(), c, tc.at, tc.status)
			if tc.wantErr != nil {
				g.Expect(err).To(MatchError(tc.wantErr))
			} else {
				g.Expect(err).NotTo(HaveOccurred())
			}
			g.Expect(written).To(Equal(tc.wantSent))
			g.Expect(got).To(BeComparableTo(tc.want))
			g.Expect(updated).To(BeComparableTo(tc.wantUpdate))
			g.Expect(tc.at).To(BeComparableTo(before), "Status modified the At")
		})
	}
}

const (
	atName      = "hello"
	atNamespace = "jobs"
)

// newAt is an At named hello in namespace jobs with no status.
func newAt() *cnatv1beta1.At {
	return &cnatv1beta1.At{
		TypeMeta:   metav1.TypeMeta{APIVersion: cnatv1beta1.GroupVersion.String(), Kind: "At"},
		ObjectMeta: metav1.ObjectMeta{Name: atName, Namespace: atNamespace, UID: "7f3c1a52-0d4e-4b8e-9a43-2c1f5e6d7a80"},
		Spec:       cnatv1beta1.AtSpec{Schedule: "2026-11-21T09:00:00+01:00", Command: "date"},
	}
}
