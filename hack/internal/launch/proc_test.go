package launch

import (
	"os/exec"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestProcReadings reads a process that burns CPU: its CPU time grows, and
// its resident set size is there and within its peak.
func TestProcReadings(t *testing.T) {
	g := NewWithT(t)
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	g.Expect(cmd.Start()).To(Succeed())
	p := &Process{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	defer func() { _ = p.Kill() }()

	g.Eventually(p.CPUSeconds).WithTimeout(10 * time.Second).Should(BeNumerically(">=", 0.05))
	rss, hwm, err := p.Memory()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rss).To(BeNumerically(">", 0))
	g.Expect(hwm).To(BeNumerically(">=", rss))
	g.Expect(p.Running()).To(BeTrue())
	g.Expect(p.Kill()).To(Succeed())
	g.Expect(p.Running()).To(BeFalse())
}
