//go:build tools

// Package tools pins helm.sh/helm/v4 so `go build helm.sh/helm/v4/cmd/helm` resolves here.
package tools

import _ "helm.sh/helm/v4/cmd/helm"
