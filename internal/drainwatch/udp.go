package drainwatch

import (
	"bytes"
	"strconv"
)

// serving reports whether a UDP socket of the table (as parseProcNet reads it: the same columns
// as TCP's) is one that clients outside the pod send to: not connected (a connected socket
// receives from its peer only, as the app's own resolver's does), bound to a wildcard or
// non-loopback address, and on a port the kernel would not pick itself (outside eph), which the
// app chose, as servers do. Why each, and what it misses: docs/adaptive-drain.md, "UDP".
func serving(s *Socket, eph portRange) bool {
	return s.Remote.Port() == 0 && s.Local.Port() != 0 && !s.Local.Addr().Unmap().IsLoopback() &&
		!eph.has(s.Local.Port())
}

// portRange is what the kernel picks a port from for a socket that binds none: the network
// namespace's ip_local_port_range, less its ip_local_reserved_ports.
type portRange struct {
	lo, hi   uint16
	reserved [][2]uint16 // inclusive ranges
}

func (r portRange) has(p uint16) bool {
	if p < r.lo || p > r.hi {
		return false
	}
	for _, res := range r.reserved {
		if p >= res[0] && p <= res[1] {
			return false
		}
	}
	return true
}

// parsePortRange reads /proc/sys/net/ipv4/ip_local_port_range: two ports, "32768\t60999\n",
// the first not above the second.
func parsePortRange(b []byte) (lo, hi uint16, ok bool) {
	f := bytes.Fields(b)
	if len(f) != 2 {
		return 0, 0, false
	}
	l, err1 := strconv.ParseUint(string(f[0]), 10, 16)
	h, err2 := strconv.ParseUint(string(f[1]), 10, 16)
	if err1 != nil || err2 != nil || l > h {
		return 0, 0, false
	}
	return uint16(l), uint16(h), true
}

// parsePortList reads /proc/sys/net/ipv4/ip_local_reserved_ports: ports and ranges separated by
// commas, "8080,9000-9100\n", or an empty line when none is reserved.
func parsePortList(b []byte) ([][2]uint16, bool) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, true
	}
	var out [][2]uint16
	for item := range bytes.SplitSeq(b, []byte(",")) {
		first, last, isRange := bytes.Cut(item, []byte("-"))
		lo, err := strconv.ParseUint(string(first), 10, 16)
		if err != nil {
			return nil, false
		}
		hi := lo
		if isRange {
			if hi, err = strconv.ParseUint(string(last), 10, 16); err != nil || hi < lo {
				return nil, false
			}
		}
		out = append(out, [2]uint16{uint16(lo), uint16(hi)})
	}
	return out, true
}
