// Package atstatus writes an At's status: a server-side apply under
// StatusFieldManager, sent only when it would change something
// (Unchanged), and written whole when an apply could not remove a field it
// leaves out (leftBehind).
package atstatus
