package signals

import "golang.org/x/sys/unix"

// ExitCode is the status a shell reports for a wait status: the exit code, or 128+N when signal
// N ended the process.
func ExitCode(ws unix.WaitStatus) int {
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case ws.Signaled():
		return 128 + int(ws.Signal())
	}
	return 255
}
