package signals

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// signalNum and signalName are golang.org/x/sys/unix's on Linux.
func signalNum(s string) syscall.Signal { return unix.SignalNum(s) }

func signalName(sig syscall.Signal) string { return unix.SignalName(sig) }
