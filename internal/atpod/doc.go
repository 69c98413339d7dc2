// Package atpod is the Pod of an At's attempt: NewPod renders it (named by
// PodName, carrying the SpecHash of what it runs), created rather than
// applied; RunOf says whether a Pod is an At's run; PodFieldsInvalid and
// ServerFailed read what a refused create means.
package atpod
