package rollout

import (
	"net"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// bindLocal binds an IPv4 socket to 127.0.0.1 and a free port before it connects, and returns the
// address: a connect that fails (a balancer resets an accepted connection before connect has
// returned) leaves no other trace of which connection it was.
func bindLocal(network string, raw syscall.RawConn) (string, error) {
	if network != "tcp4" {
		return "", nil
	}
	var local string
	var err error
	cerr := raw.Control(func(fd uintptr) {
		if err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
			return
		}
		if err = unix.Bind(int(fd), &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			return
		}
		var sa unix.Sockaddr
		if sa, err = unix.Getsockname(int(fd)); err != nil {
			return
		}
		if in4, ok := sa.(*unix.SockaddrInet4); ok {
			local = net.JoinHostPort(net.IP(in4.Addr[:]).String(), strconv.Itoa(in4.Port))
		}
	})
	if cerr != nil {
		return "", cerr
	}
	return local, err
}
