package signals

import "syscall"

// signalNum and signalName use Linux's names and numbers on every GOOS: see numbers.go.
func signalNum(s string) syscall.Signal {
	for i, n := range linuxNames {
		if n != "" && n == s {
			return syscall.Signal(i)
		}
	}
	return 0
}

func signalName(sig syscall.Signal) string {
	if sig < 0 || int(sig) >= len(linuxNames) {
		return ""
	}
	return linuxNames[sig]
}
