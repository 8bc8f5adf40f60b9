package drainwatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"
)

// diagConn is a netlink sock_diag socket (linux/inet_diag.h): the kernel's own TCP table dump,
// the one ss(8) uses. It costs a fraction of /proc/net/tcp: the kernel copies each socket as a
// 72-byte record (and a few attributes) instead of printing it, and with a filter on the local
// end (endpointFilter) keeps the other sockets to itself.
type diagConn struct {
	fd  int
	seq uint32
	buf []byte
	req []byte
	// info asks each dump for every socket's struct tcp_info (INET_DIAG_INFO), read into
	// Socket.Info: what data the connection has received, and when last.
	info bool
}

const (
	sockDiagByFamily = 20 // SOCK_DIAG_BY_FAMILY
	inetDiagReqLen   = 56 // struct inet_diag_req_v2
	inetDiagMsgLen   = 72 // struct inet_diag_msg
	attrBytecode     = 1  // INET_DIAG_REQ_BYTECODE
	attrInfo         = 2  // INET_DIAG_INFO: struct tcp_info, asked for with bit attrInfo-1 of idiag_ext
	// Where struct tcp_info (linux/tcp.h) holds what Socket.Info takes: tcpi_last_data_recv
	// (Linux 2.6), tcpi_bytes_received (4.1).
	tcpInfoLastDataRecv  = 52
	tcpInfoBytesReceived = 128
	tcpInfoMinLen        = tcpInfoBytesReceived + 8
)

// statesConns are the states of incoming connections (see detector); statesListen, listeners.
const (
	statesConns = 1<<Established | 1<<SynRecv | 1<<FinWait1 | 1<<FinWait2 | 1<<TimeWait |
		1<<CloseWait | 1<<LastAck | 1<<Closing | 1<<NewSynRecv
	statesListen = 1 << Listen
)

func openDiag() (*diagConn, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil, fmt.Errorf("netlink sock_diag socket: %w", err)
	}
	// A dump ends with NLMSG_DONE; should it not, a poll must not hang the drain.
	tv := unix.NsecToTimeval(int64(2 * time.Second))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netlink sock_diag socket: %w", err)
	}
	// The kernel sizes dump messages after the largest read buffer it has seen, up to 32 KiB: a
	// larger buffer always holds a whole one.
	return &diagConn{fd: fd, buf: make([]byte, 64<<10)}, nil
}

func (c *diagConn) close() { unix.Close(c.fd) }

// dumpTables is dump of the IPv4 table when v4, and of the IPv6 one when v6.
func (c *diagConn) dumpTables(v4, v6 bool, states uint32, filter []byte, fn func(*Socket)) error {
	if v4 {
		if err := c.dump(unix.AF_INET, states, filter, fn); err != nil {
			return err
		}
	}
	if v6 {
		return c.dump(unix.AF_INET6, states, filter, fn)
	}
	return nil
}

// dump asks for the TCP sockets of family (AF_INET or AF_INET6) in states (a bit per State)
// that pass filter (inet_diag bytecode; nil: all), and calls fn for each.
func (c *diagConn) dump(family uint8, states uint32, filter []byte, fn func(*Socket)) error {
	c.seq++
	req := append(c.req[:0], make([]byte, unix.NLMSG_HDRLEN+inetDiagReqLen)...)
	ne := binary.NativeEndian
	ne.PutUint16(req[4:], sockDiagByFamily)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	ne.PutUint32(req[8:], c.seq)
	r := req[unix.NLMSG_HDRLEN:]
	r[0], r[1] = family, unix.IPPROTO_TCP
	if c.info {
		r[2] = 1 << (attrInfo - 1)
	}
	ne.PutUint32(r[4:], states)
	if len(filter) > 0 {
		var attr [unix.SizeofNlAttr]byte
		ne.PutUint16(attr[0:], uint16(unix.SizeofNlAttr+len(filter)))
		ne.PutUint16(attr[2:], attrBytecode)
		req = append(append(req, attr[:]...), filter...)
	}
	ne.PutUint32(req[0:], uint32(len(req)))
	c.req = req
	if err := unix.Sendto(c.fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("sock_diag request: %w", err)
	}
	var s Socket
	for {
		// read(2), not recvfrom: Go's Recvfrom allocates the sender's address on every call.
		n, err := unix.Read(c.fd, c.buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("sock_diag dump: %w", err)
		}
		if n >= len(c.buf) {
			return fmt.Errorf("sock_diag dump: a message fills the %d-byte buffer, it may be cut", len(c.buf))
		}
		if done, err := parseDiag(c.buf[:n], c.seq, &s, fn); err != nil || done {
			return err
		}
	}
}

// parseDiag reads one datagram of a sock_diag dump answering request seq: a chain of netlink
// messages (struct nlmsghdr, each padded to 4 bytes), calling fn with s filled from each socket.
// It reports done at the dump's end (NLMSG_DONE, or the NLMSG_ERROR that replaces it). Every
// length is checked against what was read, and each message moves on by at least a header, so
// a lying length ends the dump with an error, never a read out of bounds or a loop.
func parseDiag(b []byte, seq uint32, s *Socket, fn func(*Socket)) (done bool, err error) {
	ne := binary.NativeEndian
	for len(b) >= unix.NLMSG_HDRLEN {
		l := int(ne.Uint32(b[0:]))
		typ, mseq := ne.Uint16(b[4:]), ne.Uint32(b[8:])
		if l < unix.NLMSG_HDRLEN || l > len(b) {
			return false, errors.New("sock_diag dump: malformed message")
		}
		body := b[unix.NLMSG_HDRLEN:l]
		b = b[min(len(b), (l+unix.NLMSG_ALIGNTO-1)&^(unix.NLMSG_ALIGNTO-1)):]
		if mseq != seq {
			continue // the rest of an earlier, abandoned dump
		}
		switch typ {
		case unix.NLMSG_DONE, unix.NLMSG_ERROR:
			// Both carry an int: 0, or minus the errno that ended the dump early (the DONE of
			// a dump that failed part way, with the table only partly sent). Linux has always
			// sent it; a DONE without it is taken as a plain end, an NLMSG_ERROR without it as malformed.
			if len(body) < 4 {
				if typ == unix.NLMSG_ERROR {
					return false, errors.New("sock_diag dump: short error message")
				}
				return true, nil
			}
			if errno := -int32(ne.Uint32(body)); errno != 0 {
				return false, fmt.Errorf("sock_diag dump: %w", unix.Errno(uint32(errno)))
			}
			return true, nil
		case sockDiagByFamily:
			if len(body) < inetDiagMsgLen {
				return false, errors.New("sock_diag dump: short message")
			}
			diagSocket(body, s)
			fn(s)
		}
	}
	return false, nil
}

// diagSocket reads a struct inet_diag_msg and, from the attributes after it, the socket's
// tcp_info when the dump carries it (Socket.Info.OK).
func diagSocket(m []byte, s *Socket) {
	s.Cookie = binary.NativeEndian.Uint64(m[44:])
	s.V6 = m[0] == unix.AF_INET6
	s.State = State(m[1])
	// inet_diag_sockid: ports in network byte order, addresses as 16 bytes (IPv4 in the first 4).
	sport, dport := binary.BigEndian.Uint16(m[4:]), binary.BigEndian.Uint16(m[6:])
	var src, dst netip.Addr
	if s.V6 {
		src, dst = netip.AddrFrom16([16]byte(m[8:24])), netip.AddrFrom16([16]byte(m[24:40]))
	} else {
		src, dst = netip.AddrFrom4([4]byte(m[8:12])), netip.AddrFrom4([4]byte(m[24:28]))
	}
	s.Local, s.Remote = netip.AddrPortFrom(src, sport), netip.AddrPortFrom(dst, dport)
	s.UID = binary.NativeEndian.Uint32(m[64:])
	s.Inode = uint64(binary.NativeEndian.Uint32(m[68:]))
	s.Info = TCPInfo{}
	for a := m[inetDiagMsgLen:]; len(a) >= unix.SizeofNlAttr; {
		l, typ := int(binary.NativeEndian.Uint16(a[0:])), binary.NativeEndian.Uint16(a[2:])
		if l < unix.SizeofNlAttr || l > len(a) {
			break // malformed: the socket is read without its info
		}
		if v := a[unix.SizeofNlAttr:l]; typ == attrInfo && len(v) >= tcpInfoMinLen {
			s.Info = TCPInfo{
				OK:            true,
				LastDataRecv:  time.Duration(binary.NativeEndian.Uint32(v[tcpInfoLastDataRecv:])) * time.Millisecond,
				BytesReceived: binary.NativeEndian.Uint64(v[tcpInfoBytesReceived:]),
			}
		}
		a = a[min(len(a), (l+unix.NLA_ALIGNTO-1)&^(unix.NLA_ALIGNTO-1)):]
	}
}
