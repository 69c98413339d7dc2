package atcache

import (
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// TestPendingAtsByDue: cnat_pending_ats counts only pending Ats, each in
// the one bucket its status.scheduledTime falls into, every bucket present
// (0 when empty); an At without scheduledTime is unknown; a suspended At
// and one with an invalid spec are not overdue.
func TestPendingAtsByDue(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	d := func(d time.Duration) *time.Duration { return &d }
	at := func(name string, phase cnatv1beta1.Phase, in *time.Duration) *cnatv1beta1.At {
		a := &cnatv1beta1.At{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
		a.Status.Phase = phase
		if in != nil {
			a.Status.ScheduledTime = &metav1.Time{Time: now.Add(*in)}
		}
		return a
	}
	suspended := at("suspended", cnatv1beta1.PhasePending, d(-time.Hour))
	suspended.Spec.Suspend = ptr.To(true)
	invalid := at("invalid-template", cnatv1beta1.PhasePending, d(-time.Hour))
	invalid.Status.Reason = cnatv1beta1.ReasonInvalidSpec
	notSuspended := at("resumed", cnatv1beta1.PhasePending, d(-time.Hour))
	notSuspended.Spec.Suspend = ptr.To(false)
	store := New(clocktesting.NewFakeClock(now), 0, nil, logr.Discard())
	var ats []any
	for _, at := range []*cnatv1beta1.At{
		at("due-now", cnatv1beta1.PhasePending, d(0)),       // overdue: due is due
		at("late", cnatv1beta1.PhasePending, d(-time.Hour)), // overdue
		at("new", "", nil),                           // unknown: not reconciled yet
		at("invalid", cnatv1beta1.PhasePending, nil), // unknown
		suspended,    // suspended, though past due
		invalid,      // invalid, though past due
		notSuspended, // overdue
		at("soon", cnatv1beta1.PhasePending, d(time.Minute)),                         // within_1m (bound included)
		at("minutes", cnatv1beta1.PhasePending, d(time.Minute+time.Second)),          // within_10m
		at("hour", cnatv1beta1.PhasePending, d(time.Hour)),                           // within_1h
		at("tomorrow", cnatv1beta1.PhasePending, d(24*time.Hour)),                    // within_1d
		at("next-week", cnatv1beta1.PhasePending, d(7*24*time.Hour)),                 // later
		at("running", cnatv1beta1.PhaseRunning, d(-time.Minute)),                     // not pending
		at("failed", cnatv1beta1.PhaseFailed, d(-time.Minute)),                       // not pending
		at("next-week-too", cnatv1beta1.PhasePending, d(7*24*time.Hour+time.Second)), // later
	} {
		ats = append(ats, at)
	}
	collector := store.Collector()
	g.Expect(testutil.CollectAndCount(collector)).To(BeZero(), "nothing until every At is listed")
	g.Expect(reflected{store}.Replace(ats, "1")).To(Succeed())
	g.Expect(testutil.CollectAndCompare(collector, strings.NewReader(`
# HELP cnat_pending_ats `+pendingAtsHelp+`
# TYPE cnat_pending_ats gauge
cnat_pending_ats{due="later"} 2
cnat_pending_ats{due="invalid"} 1
cnat_pending_ats{due="overdue"} 3
cnat_pending_ats{due="suspended"} 1
cnat_pending_ats{due="unknown"} 2
cnat_pending_ats{due="within_10m"} 1
cnat_pending_ats{due="within_1d"} 1
cnat_pending_ats{due="within_1h"} 1
cnat_pending_ats{due="within_1m"} 1
# HELP cnat_ats Ats by phase.
# TYPE cnat_ats gauge
cnat_ats{phase="Failed"} 1
cnat_ats{phase="Missed"} 0
cnat_ats{phase="Pending"} 13
cnat_ats{phase="Running"} 1
cnat_ats{phase="Succeeded"} 0
`))).To(Succeed())
}
