//go:build tools

// Package tools records what scripts/helm-binary.sh builds (helm) and what the chart's e2e test reads from the module
// cache (cert-manager's CRDs, deploy/crds, to check the chart's Certificate and Issuer against a real API server), so
// that `go mod tidy` keeps both pinned in go.mod and go.sum.
package tools

import (
	_ "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	_ "helm.sh/helm/v4/cmd/helm"
)
