//go:build tools

// Package tools records what scripts/helm-binary.sh builds (helm) and what the chart's e2e test reads from the module
// cache, so that `go mod tidy` keeps them pinned in go.mod and go.sum: cert-manager's CRDs (deploy/crds), to check the
// chart's Certificate and Issuer against a real API server, and Prometheus Operator's (example/prometheus-operator-crd),
// to check its PodMonitor. The operator's CRDs live only in its main module, whose one package without imports outside
// the standard library is an example program: importing it pins the module without adding its dependencies to
// helm's.
package tools

import (
	_ "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	_ "github.com/prometheus-operator/prometheus-operator/example/alertmanager-webhook"
	_ "helm.sh/helm/v4/cmd/helm"
)
