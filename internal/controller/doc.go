// Package controller holds the At reconciler: the state machine that starts
// an At's Pod at its time and records on the At how the run went.
//
// A reconcile recomputes everything from the At, its Pods and the clock
// (level-triggered): the phase functions in at_phases.go each decide one
// step, at_status.go turns the decision into the At's status and
// conditions, and the status is written once, at the end, by server-side
// apply, and only when it differs from what the controller last wrote.
package controller
