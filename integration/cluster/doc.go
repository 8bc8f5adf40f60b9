// Package cluster stops drainit behind a real kube-proxy: kube-apiserver (with Debian's etcd),
// kube-controller-manager's endpointslice controller and kube-proxy in iptables mode, built from
// k8s.io/kubernetes (tools/kubelet, scripts/kubelet.sh), all in a network namespace of the test's
// own. There is no kubelet (integration/node runs the real one): the pods are API objects whose
// status the test writes, served by drainit and the test app in that namespace; at the
// deletion the test calls drainit's /prestop, as the kubelet's httpGet preStop does, and sends
// SIGTERM once it returns. README.md says what is real, what is not, and what runs showed.
//
// Start and the rest are exported for integration/node, whose TestCluster* put a real kubelet
// and containerd behind the same control plane, registered as its node: the whole chain.
//
// It shows what the adaptive drain faces in a cluster: a deleted pod stops getting new
// connections through the Service once the endpointslice controller and kube-proxy have acted,
// while another pod is ready; the Service's last ready pod goes on getting them until its Ready
// condition turns false (docs/kubelet-stop-sequence.md).
package cluster
