//go:build !linux

package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
)

// runCmd refuses off Linux: supervising an app (PID 1, reaping, signal forwarding, the adaptive
// drain's /proc/net) is Linux's. The build exists for drainit check and drainit version, which
// work on a laptop where the manifests are.
func runCmd(_ []string, _ io.Writer, stderr *os.File) int {
	fmt.Fprintf(stderr, "drainit: running an app needs Linux (this is a %s/%s build; drainit check and drainit version work here)\n",
		runtime.GOOS, runtime.GOARCH)
	return 2
}
