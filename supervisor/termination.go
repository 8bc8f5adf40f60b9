package supervisor

import (
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// terminationLogMax is what the kubelet reads of a termination log (its last 4096 bytes).
const terminationLogMax = 4096

// writeTerminationLog leaves the summary where Kubernetes shows it (kubectl describe pod reads the
// last 4096 bytes of terminationMessagePath). The file must exist already, as the kubelet's
// bind mount does: drainit does not create it, and a missing or read-only path is no error.
//
// Nothing here may wait: it runs as drainit exits, before the runtime's SIGKILL. The open is
// non-blocking because opening a FIFO (or /dev/stdout, a pipe, through /proc) for writing waits
// for a reader that may never come; the write to one whose reader does not read then fails
// rather than waits, and the summary, which the log has too, is all that is lost.
func writeTerminationLog(path, summary string) {
	if path == "" || summary == "" {
		return
	}
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_TRUNC|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	_, _ = unix.Write(fd, []byte(cutMiddle(summary, terminationLogMax)))
}

// elision marks what cutMiddle left out.
const elision = " … "

// cutMiddle fits s into n bytes by leaving out its middle: the summary's start says how the stop
// began and its end how drainit exited, with the status. Never inside a UTF-8 sequence: the
// kubelet passes the message on to the API server, where an invalid sequence would become
// U+FFFD, or worse.
func cutMiddle(s string, n int) string {
	if len(s) <= n {
		return s
	}
	keep := n - len(elision)
	head, tail := keep/2, len(s)-(keep-keep/2)
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return s[:head] + elision + s[tail:]
}
