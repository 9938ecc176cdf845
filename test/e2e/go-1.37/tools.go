//go:build tools

// Package tools records the upstream commands built by scripts/e2e-binaries.sh,
// so that `go mod tidy` keeps their requirements in go.mod and go.sum.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
