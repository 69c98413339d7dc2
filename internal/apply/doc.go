// Package apply renders the Pod that runs an At's command (RenderPod, as an
// apply configuration, and NewPod, the Pod the controller creates: Pods are
// created, never applied over), names it (PodName), digests the spec it
// runs (SpecHash), and decides whether an apply of the At's status would
// change anything (Unchanged).
package apply
