//go:build tools

// Package kubelet pins the main packages of the Kubernetes parts the integration tests run, so
// that `go build k8s.io/kubernetes/cmd/NAME` in this module builds exactly the version go.mod
// names. scripts/kubelet.sh builds and caches each: the kubelet for integration/node;
// kube-apiserver, kube-controller-manager and kube-proxy for integration/cluster.
package kubelet

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
