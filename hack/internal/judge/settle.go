package judge

import (
	cnatv1beta1 "github.com/programming-kubernetes/cnat/api/v1beta1"
)

// Settle completes the incarnations a harness created for judging: each
// with its samples and, if it is among ats (the run's Ats as the API server
// holds them at the end), alive with its status. gone names those that are
// not.
func Settle(created []Incarnation, samples map[string][]Sample, ats []cnatv1beta1.At) (settled []Incarnation, gone []string) {
	alive := make(map[string]*cnatv1beta1.At, len(ats))
	for i := range ats {
		alive[string(ats[i].UID)] = &ats[i]
	}
	settled = make([]Incarnation, 0, len(created))
	for _, inc := range created {
		inc.Samples = samples[inc.UID]
		if at, ok := alive[inc.UID]; ok {
			inc.Alive = true
			inc.Phase = string(at.Status.Phase)
			inc.Reason = at.Status.Reason
			inc.PodName = at.Status.PodName
			inc.ExitCode = at.Status.ExitCode
		} else {
			gone = append(gone, inc.Name)
		}
		settled = append(settled, inc)
	}
	return settled, gone
}
