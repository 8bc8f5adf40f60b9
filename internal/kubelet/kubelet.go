// Package kubelet holds what drainit relies on of the kubelet's stop sequence, each as the
// kubelet's source has it (k8s.io/kubernetes v1.33; docs/kubelet-stop-sequence.md has the whole
// sequence and what a real kubelet showed): one value, for the supervisor and the manifest
// check. (The User-Agent of the kubelet's httpGet hooks is internal/control's kubeletUserAgent.)
package kubelet

import "time"

// MinGraceAfterSignal is the least time the kubelet gives the runtime from the stop signal to
// SIGKILL: pkg/kubelet/kuberuntime's minimumGracePeriodInSeconds. It is also all the container
// gets once the kubelet's wait for its preStop hook has taken the whole grace period.
const MinGraceAfterSignal = 2 * time.Second
