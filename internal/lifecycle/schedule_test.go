package lifecycle_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/lifecycle"
)

// TestScheduledTimeMessages pins complete messages, as users see them in
// events and conditions, in the webhook's refusals and from cnatctl at.
func TestScheduledTimeMessages(t *testing.T) {
	berlin := ptr.To("Europe/Berlin")
	for _, tt := range []struct {
		spec cnatv1beta1.AtSpec
		want string
	}{
		{
			spec: cnatv1beta1.AtSpec{Schedule: "tomorrow"},
			want: `spec.schedule: Invalid value: "tomorrow": must be an RFC 3339 time with an offset, such as 2026-11-21T09:00:00Z or 2026-11-21T09:00:00+01:00, or a wall-clock time such as 2026-11-21T09:00:00 together with spec.timeZone`,
		},
		{
			spec: cnatv1beta1.AtSpec{Schedule: "2026-11-21T09:00:00"},
			want: `spec.schedule: Invalid value: "2026-11-21T09:00:00": a time without offset requires spec.timeZone; must be an RFC 3339 time with an offset, such as 2026-11-21T09:00:00Z or 2026-11-21T09:00:00+01:00, or a wall-clock time such as 2026-11-21T09:00:00 together with spec.timeZone`,
		},
		{
			spec: cnatv1beta1.AtSpec{Schedule: "2026-11-21T09:00:00+01:00", TimeZone: berlin},
			want: `spec.schedule: Invalid value: "2026-11-21T09:00:00+01:00": a time with an offset is ambiguous together with spec.timeZone: remove the offset or the timeZone; must be a wall-clock time without offset, such as 2026-11-21T09:00:00 or 2026-11-21T09:00, because spec.timeZone is set`,
		},
		{
			// At the limit: read, quoted whole, and not called too long.
			spec: cnatv1beta1.AtSpec{Schedule: "2026-11-21T09:00:00Z" + strings.Repeat(" ", 44)},
			want: `spec.schedule: Invalid value: "2026-11-21T09:00:00Z` + strings.Repeat(" ", 44) + `": must be an RFC 3339 time with an offset, such as 2026-11-21T09:00:00Z or 2026-11-21T09:00:00+01:00, or a wall-clock time such as 2026-11-21T09:00:00 together with spec.timeZone`,
		},
		{
			spec: cnatv1beta1.AtSpec{Schedule: "2026-11-21T09:00", TimeZone: ptr.To("Europe/Berln")},
			want: `spec.timeZone: Invalid value: "Europe/Berln": unknown time zone; must be a time zone name from the IANA tz database, such as Europe/Berlin, America/New_York or UTC`,
		},
		{
			// The time zone is checked first.
			spec: cnatv1beta1.AtSpec{Schedule: "tomorrow", TimeZone: ptr.To("Local")},
			want: `spec.timeZone: Invalid value: "Local": "Local" is the time zone of the controller's machine, not of the At; must be a time zone name from the IANA tz database, such as Europe/Berlin, America/New_York or UTC`,
		},
	} {
		t.Run(tt.want[:strings.Index(tt.want, ":")]+" "+tt.spec.Schedule, func(t *testing.T) {
			g := NewWithT(t)
			got, err := lifecycle.ScheduledTime(&tt.spec)
			g.Expect(err).To(MatchError(tt.want))
			g.Expect(got).To(BeZero())
		})
	}
}

// TestScheduledTime: a schedule read in its time zone, with no error.
func TestScheduledTime(t *testing.T) {
	g := NewWithT(t)
	got, err := lifecycle.ScheduledTime(&cnatv1beta1.AtSpec{Schedule: "2026-11-21T09:00", TimeZone: ptr.To("Europe/Berlin")})
	g.Expect(err).To(BeNil())
	g.Expect(got).To(BeTemporally("==", time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)))
	g.Expect(got.Location().String()).To(Equal("Europe/Berlin"))
}
