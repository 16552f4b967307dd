//go:build tools

// Package tools pins github.com/prometheus/prometheus so `go build
// github.com/prometheus/prometheus/cmd/promtool` (and cmd/prometheus) resolve here.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
