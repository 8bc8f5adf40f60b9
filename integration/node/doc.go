// Package node tests drainit under a real kubelet: TestMain starts a containerd and a standalone
// kubelet of the run's own, and each test runs a static pod and deletes it, as a rollout does,
// then reads what the kubelet, containerd, drainit and the app each logged. README.md next to
// this file says what the set-up needs and what a real kubelet was seen to do.
//
// The package has no code of its own besides this comment: everything is in _test.go files.
//
//	go test ./integration/node/
package node
