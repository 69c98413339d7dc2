//go:build tools

// Package cyclonedxgomod records the command this module builds so that
// `go mod tidy` keeps its dependencies.
package cyclonedxgomod

import _ "github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod"
