// Package controller holds the At reconciler: the state machine that starts
// an At's Pod at its time and records on the At how the run went.
//
// A reconcile recomputes everything from the At, its Pods and the clock
// (level-triggered): lifecycle.Decide, a pure function, decides the status
// and the one thing to do; at_controller.go reads what Decide needs and
// carries the decision out; at_status.go writes the status once, by
// server-side apply, and only when it differs from what the controller last
// wrote.
package controller
