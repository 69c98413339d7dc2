// Package apply renders what cnat sends to the API server by server-side
// apply: the Pod that runs an At's command, as an apply configuration.
package apply
