//go:build tools

// Package kubelet pins the kubelet's main package, so that `go build k8s.io/kubernetes/cmd/kubelet`
// in this module builds exactly the version go.mod names. scripts/kubelet.sh builds and caches it
// for the real-kubelet tests in integration/node.
package kubelet

import _ "k8s.io/kubernetes/cmd/kubelet"
