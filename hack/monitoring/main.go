// Command monitoring writes cnat's Grafana dashboard, generated with the
// Grafana Foundation SDK, to kustomize/components/monitoring/dashboard.json
// (`make dashboard`; `make verify` fails when the committed file differs).
// The file is generated: change dashboard.go, never the JSON.
//
// Its tests (`make test-monitoring`) check the dashboard and the alerts of
// rules.yaml: every PromQL expression parses, and every metric and label it
// names is one the controller exports.
//
// Usage: go run . [-o FILE]   (default: standard output)
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
)

func main() {
	out := flag.String("o", "", "write the dashboard to this file instead of standard output")
	flag.Parse()
	data, err := dashboardJSON()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *out == "" {
		_, err = os.Stdout.Write(data)
	} else {
		err = os.WriteFile(*out, data, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// dashboardJSON is the dashboard as Grafana imports it: indented JSON with
// a final newline.
func dashboardJSON() ([]byte, error) {
	d, err := cnatDashboard().Build()
	if err != nil {
		return nil, fmt.Errorf("building the dashboard: %w", err)
	}
	data, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the dashboard: %w", err)
	}
	return append(data, '\n'), nil
}
