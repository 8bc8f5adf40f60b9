package drainwatch

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"time"
)

// State is a TCP socket state, numbered as the kernel numbers them (include/net/tcp_states.h),
// which is how /proc/net/tcp and sock_diag report them.
type State uint8

// The TCP states.
const (
	Established State = 1
	SynSent     State = 2
	SynRecv     State = 3
	FinWait1    State = 4
	FinWait2    State = 5
	TimeWait    State = 6
	Close       State = 7
	CloseWait   State = 8
	LastAck     State = 9
	Listen      State = 10
	Closing     State = 11
	NewSynRecv  State = 12 // a request socket; the kernel reports it as SynRecv
)

var stateNames = [...]string{"", "ESTABLISHED", "SYN_SENT", "SYN_RECV", "FIN_WAIT1", "FIN_WAIT2",
	"TIME_WAIT", "CLOSE", "CLOSE_WAIT", "LAST_ACK", "LISTEN", "CLOSING", "NEW_SYN_RECV"}

func (s State) String() string {
	if int(s) < len(stateNames) && s != 0 {
		return stateNames[s]
	}
	return fmt.Sprintf("STATE_%d", uint8(s))
}

// Socket is one entry of the TCP table.
type Socket struct {
	Local, Remote netip.AddrPort
	State         State
	// Inode is the socket's inode: the number /proc/PID/fd/N links to as socket:[N]. It is 0
	// while no process holds the socket: a connection not yet accept()ed, a request socket
	// (SYN_RECV), a TIME_WAIT entry, a connection its process has closed.
	Inode uint64
	V6    bool // from the IPv6 table (tcp6, AF_INET6): v4-mapped addresses come from dual-stack sockets
	// Cookie is the kernel's id of the socket (sock_diag only): unique while the socket lives.
	Cookie uint64
	// Info is what the connection has received (sock_diag with the info asked for only).
	Info TCPInfo
	// UID is the socket's owner: the user whose process made it (its fsuid then).
	UID uint32
}

// TCPInfo is what the adaptive drain reads of a connection's struct tcp_info: whether requests
// still come on it.
type TCPInfo struct {
	OK            bool          // the dump carried it
	LastDataRecv  time.Duration // since the last data received (to the millisecond)
	BytesReceived uint64        // data received over the connection's life
}

// parseProcNet reads a /proc/net/tcp or /proc/net/tcp6 table and calls fn for each socket that
// want accepts (nil: every one); fn must not keep the pointer. want sees the local port and the
// state before the rest of the line is parsed, so that lines nobody needs cost little. It
// allocates nothing per line: the table is parsed where it lies, because drainit reads it many
// times a second while draining. A malformed line is an error naming it: the format has not changed since
// Linux 2.6, so anything else is not a TCP table.
func parseProcNet(data []byte, v6 bool, want func(port uint16, st State) bool, fn func(*Socket)) error {
	nl := bytes.IndexByte(data, '\n')
	if nl < 0 || !bytes.Contains(data[:nl], []byte("local_address")) {
		return fmt.Errorf("not a /proc/net/tcp table: the header line is missing")
	}
	data = data[nl+1:]
	var s Socket
	for n := 2; len(data) > 0; n++ {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		ok, err := parseProcNetLine(line, v6, want, &s)
		if err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		if ok {
			fn(&s)
		}
	}
	return nil
}

// parseProcNetLine parses one entry, unless want turns it down (or it is blank): then it
// returns false.
//
//	sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...
//	0: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000 1000 0 123456 ...
func parseProcNetLine(line []byte, v6 bool, want func(uint16, State) bool, s *Socket) (bool, error) {
	var f [10][]byte
	n, i := 0, 0
	field := func() bool { // the next space-separated field into f[n]
		for i < len(line) && line[i] == ' ' {
			i++
		}
		j := i
		for j < len(line) && line[j] != ' ' {
			j++
		}
		if j == i {
			return false
		}
		f[n], n, i = line[i:j], n+1, j
		return true
	}
	for n < 4 && field() {
	}
	if n == 0 {
		return false, nil // blank
	}
	if n < 4 {
		return false, fmt.Errorf("%d fields, want at least %d", n, len(f))
	}
	var ok bool
	if s.Local, ok = parseHexAddrPort(f[1], v6); !ok {
		return false, fmt.Errorf("bad local address %q", f[1])
	}
	st, ok := parseHex(f[3])
	if !ok || len(f[3]) != 2 {
		return false, fmt.Errorf("bad state %q", f[3])
	}
	s.State = State(st)
	if want != nil && !want(s.Local.Port(), s.State) {
		return false, nil
	}
	for n < len(f) && field() {
	}
	if n < len(f) {
		return false, fmt.Errorf("%d fields, want at least %d", n, len(f))
	}
	if s.Remote, ok = parseHexAddrPort(f[2], v6); !ok {
		return false, fmt.Errorf("bad remote address %q", f[2])
	}
	if s.Inode, ok = parseDec(f[9]); !ok {
		return false, fmt.Errorf("bad inode %q", f[9])
	}
	uid, ok := parseDec(f[7])
	if !ok || uid > 1<<32-1 {
		return false, fmt.Errorf("bad uid %q", f[7])
	}
	s.UID, s.V6 = uint32(uid), v6
	return true, nil
}

// parseHexAddrPort reads ADDR:PORT as the kernel prints it: the address as 32-bit words in host
// byte order, each %08X (one word for IPv4, four for IPv6), then the port as %04X.
func parseHexAddrPort(b []byte, v6 bool) (netip.AddrPort, bool) {
	words := 1
	if v6 {
		words = 4
	}
	if len(b) != words*8+5 || b[words*8] != ':' {
		return netip.AddrPort{}, false
	}
	var a [16]byte
	for w := range words {
		v, ok := parseHex(b[w*8 : w*8+8])
		if !ok {
			return netip.AddrPort{}, false
		}
		binary.NativeEndian.PutUint32(a[w*4:], uint32(v))
	}
	port, ok := parseHex(b[words*8+1:])
	if !ok {
		return netip.AddrPort{}, false
	}
	addr := netip.AddrFrom16(a)
	if !v6 {
		addr = netip.AddrFrom4([4]byte(a[:4]))
	}
	return netip.AddrPortFrom(addr, uint16(port)), true
}

// parseHex reads up to 16 hex digits (at least one).
func parseHex(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		default:
			return 0, false
		}
		v = v<<4 | uint64(c)
	}
	return v, true
}

// parseDec reads an unsigned decimal number of up to 19 digits.
func parseDec(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	return v, true
}
