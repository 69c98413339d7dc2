package lifecycle_test

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
	"github.com/programming-kubernetes/cnat/internal/lifecycle"
)

// TestScheduledTimeMessages pins complete messages, as users see them in
// events and conditions, in the webhook's refusals and in cnatctl at.
func TestScheduledTimeMessages(t *testing.T) {
	tests := []struct {
		name     string
		schedule string
		timeZone string
		want     string
	}{
		{
			name:     "not a time",
			schedule: "tomorrow",
			want:     `spec.schedule: Invalid value: "tomorrow": must be an RFC 3339 time with an offset, such as 2026-11-21T09:00:00Z or 2026-11-21T09:00:00+01:00, or a wall-clock time such as 2026-11-21T09:00:00 together with spec.timeZone`,
		},
		{
			name:     "no offset without zone",
			schedule: "2026-11-21T09:00:00",
			want:     `spec.schedule: Invalid value: "2026-11-21T09:00:00": a time without offset requires spec.timeZone; must be an RFC 3339 time with an offset, such as 2026-11-21T09:00:00Z or 2026-11-21T09:00:00+01:00, or a wall-clock time such as 2026-11-21T09:00:00 together with spec.timeZone`,
		},
		{
			name:     "offset with zone",
			schedule: "2026-11-21T09:00:00+01:00",
			timeZone: "Europe/Berlin",
			want:     `spec.schedule: Invalid value: "2026-11-21T09:00:00+01:00": a time with an offset is ambiguous together with spec.timeZone: remove the offset or the timeZone; must be a wall-clock time without offset, such as 2026-11-21T09:00:00 or 2026-11-21T09:00, because spec.timeZone is set`,
		},
		{
			// At the limit: read, quoted whole, and not called too long.
			name:     "64 bytes",
			schedule: "2026-11-21T09:00:00Z" + strings.Repeat(" ", 44),
			want:     `spec.schedule: Invalid value: "2026-11-21T09:00:00Z` + strings.Repeat(" ", 44) + `": must be an RFC 3339 time with an offset, such as 2026-11-21T09:00:00Z or 2026-11-21T09:00:00+01:00, or a wall-clock time such as 2026-11-21T09:00:00 together with spec.timeZone`,
		},
		{
			name:     "unknown zone",
			schedule: "2026-11-21T09:00",
			timeZone: "Europe/Berln",
			want:     `spec.timeZone: Invalid value: "Europe/Berln": unknown time zone; must be a time zone name from the IANA tz database, such as Europe/Berlin, America/New_York or UTC`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			spec := &cnatv1beta1.AtSpec{Schedule: tt.schedule}
			if tt.timeZone != "" {
				spec.TimeZone = ptr.To(tt.timeZone)
			}
			_, err := lifecycle.ScheduledTime(spec)
			g.Expect(err).To(MatchError(tt.want))
		})
	}
}
