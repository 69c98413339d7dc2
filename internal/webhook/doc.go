// Package webhook holds cnat's admission and conversion webhooks for the At
// kind: a defaulter, a validator for what the CRD's schema and CEL rules
// cannot say (the schedule really parses, the time zone exists, the Pod the
// At would create is one the API server accepts), and the confused-deputy
// guard, which refuses an At from a user who may not create Pods in its
// namespace. Conversion between v1alpha1 and v1beta1 lives with the types
// (api/v1alpha1/at_conversion.go); Setup registers it.
package webhook
