package judge

import (
	"slices"
	"time"
)

// KillsInWindow counts the kills that landed where a controller's crash
// matters most: after it created an At's Pod and before the API server
// accepted the At status write that followed (the one that records the
// attempt, or says why not). A controller killed there restarts with a Pod
// its At's status does not name yet, and must neither create it again nor
// forget it. A run whose kills all landed elsewhere did not test that.
// The kill times and the audit timestamps come from the same machine's
// clock.
func KillsInWindow(kills []time.Time, rec Record) int {
	type key struct{ namespace, name string }
	writes := map[key][]time.Time{}
	for _, w := range rec.AtStatusWrites {
		k := key{w.Namespace, w.Name}
		writes[k] = append(writes[k], w.Time)
	}
	for _, ts := range writes {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	}
	in := 0
	for _, kill := range kills {
		for _, c := range rec.Creates {
			if c.OwnerName == "" || kill.Before(c.Time) {
				continue
			}
			// The first status write of its At received after the create.
			ts := writes[key{c.Namespace, c.OwnerName}]
			i, _ := slices.BinarySearchFunc(ts, c.Time, func(a, b time.Time) int { return a.Compare(b) })
			if i == len(ts) || kill.Before(ts[i]) {
				in++
				break
			}
		}
	}
	return in
}
