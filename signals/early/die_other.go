//go:build !linux

package early

import (
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Terminating lists the signals whose default action ends a process and that a Go program can
// catch, of those every system has (see the Linux version).
func Terminating() []os.Signal { return []os.Signal{os.Interrupt, syscall.SIGTERM} }

// DieBy ends the process by sig at its default action, as far as os/signal can: it hands sig
// back to the runtime's default and sends it again. It returns only if that did not end the
// process: the caller then exits on its own.
func DieBy(sig os.Signal) {
	signal.Reset(sig)
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Signal(sig)
	}
	time.Sleep(100 * time.Millisecond)
}
