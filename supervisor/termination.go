package supervisor

import "os"

// writeTerminationLog leaves the summary where Kubernetes shows it (kubectl describe pod reads the
// last 4096 bytes of terminationMessagePath). The file must exist already, as the kubelet's
// bind mount does: drainit does not create it, and a missing or read-only path is no error.
func writeTerminationLog(path, summary string) {
	if path == "" || summary == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return
	}
	defer f.Close()
	if len(summary) > 4096 {
		summary = summary[:4096]
	}
	_, _ = f.WriteString(summary)
}
