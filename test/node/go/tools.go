//go:build tools

// Package tools records the upstream commands that scripts/node-binaries.sh builds for the node suite, so that
// `go mod tidy` keeps their requirements. etcd, kube-apiserver and kube-controller-manager come from test/e2e/go's
// build (scripts/e2e-binaries.sh); they are imported here as well so that this module selects exactly the versions
// that one does and the Go build cache filled by those builds serves these.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
