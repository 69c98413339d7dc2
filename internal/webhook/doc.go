// Package webhook holds cnat's admission and conversion webhooks for the At
// kind: the defaulter, the validator of what the CRD's schema and CEL rules
// cannot say, and the confused-deputy guard. The conversion itself lives with
// the types (api/v1alpha1/at_conversion.go).
package webhook
