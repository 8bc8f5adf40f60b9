package supervisor

import "golang.org/x/sys/unix"

// exit is one state change the reaper collected.
type exit struct {
	pid int
	ws  unix.WaitStatus
}

// reap collects every child that has changed state, without blocking: wait4(-1, WNOHANG) until
// it returns 0 (children remain, none has changed) or ECHILD (no child at all, reported as
// none). extra adds WUNTRACED|WCONTINUED when job control is on. EINTR is retried.
//
// This is the only wait in drainit: the app's status is picked out of what it returns by pid, so
// it can never be lost to a second waiter.
func reap(extra int) (exits []exit, none bool) {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG|extra, nil)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.ECHILD:
			return exits, true
		case err != nil || pid <= 0:
			return exits, false
		}
		exits = append(exits, exit{pid, ws})
	}
}
