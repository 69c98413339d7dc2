// Package apply holds what the controller sends the API server about an
// At: the Pod of an attempt (NewPod, named by PodName, carrying the SpecHash
// of what it runs), created rather than applied, and whether the API
// server's own validation refused it (PodFieldsInvalid); and the server-side
// apply of the At's status under its field manager (Status,
// StatusFieldManager), sent only when it would change something
// (Unchanged).
package apply
