//go:build unix

package http1

import (
	"errors"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// peerOpen peeks at c's socket without waiting: a read of 0 bytes (end of stream) or an error
// (a reset) says the peer has closed its end; data, or nothing yet, that it has not; a connection
// this side has closed is gone too. Through Control, not Read: Read fails at once past the read
// deadline the server left on c. A peer gone with data of its own left unread (pipelined past
// the server's buffer) looks open still.
func peerOpen(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true
	}
	// An error from SyscallConn or Control is the connection closed on this side already (the
	// handler's time ran out): no one can get the answer any more.
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := true
	var b [1]byte
	if err := rc.Control(func(fd uintptr) {
		for {
			n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			open = n > 0 || errors.Is(err, unix.EAGAIN)
			return
		}
	}); err != nil {
		return false
	}
	return open
}
