// Package scheduler holds the time rules of cnat: when an At is due, whether
// it may still run, and how long to wait between attempts.
//
// It is pure: no client, no clock (callers pass the time), its only I/O
// time.LoadLocation, so binaries import time/tzdata. The accepted schedule
// forms, the daylight saving rules and the maintainers' notes are in
// docs/architecture.md ("Time").
package scheduler
