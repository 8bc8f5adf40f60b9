package rollout

import (
	"net"

	"golang.org/x/sys/unix"
)

// TCP states (include/net/tcp_states.h) in which the peer has closed its side.
const (
	tcpClose     = 7
	tcpCloseWait = 8
	tcpLastAck   = 9
)

// peerClosed says whether the peer of c has sent its FIN (or a RST), from the kernel's own state
// of the socket: what has arrived, whether or not anyone has read it yet.
func peerClosed(c *net.TCPConn) bool {
	raw, err := c.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	_ = raw.Control(func(fd uintptr) {
		info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
		if err != nil {
			return
		}
		switch info.State {
		case tcpClose, tcpCloseWait, tcpLastAck:
			closed = true
		}
	})
	return closed
}
