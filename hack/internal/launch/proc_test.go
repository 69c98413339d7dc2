package launch

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestStatField(t *testing.T) {
	g := NewWithT(t)
	// The command name may hold spaces and parentheses.
	stat := []byte("4242 (cnat (ctl) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 12 0 1000 2000000 3000 18446744073709551615\n")
	for field, want := range map[int]string{3: "S", 4: "1", 14: "250", 15: "75"} {
		g.Expect(statField(stat, field)).To(Equal(want), "field %d", field)
	}
	_, err := statField(stat, 99)
	g.Expect(err).To(HaveOccurred(), "field 99 of a line with fewer fields")
}
