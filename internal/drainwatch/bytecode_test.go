package drainwatch

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/drainit/drainit/internal/config"
)

// bcRun and bcAudit are the kernel's inet_diag_bc_run and inet_diag_bc_audit
// (net/ipv4/inet_diag.c) for the ops endpointFilter uses.
func bcRun(bc []byte, s Socket) bool {
	ne := binary.NativeEndian
	family := afInet
	if s.V6 {
		family = afInet6
	}
	addr := s.Local.Addr().As16() // the kernel's entry->saddr: IPv4 in the first 4 bytes
	if !s.V6 {
		a4 := s.Local.Addr().As4()
		addr = [16]byte{}
		copy(addr[:], a4[:])
	}
	prefixMatch := func(a, c []byte, bits int) bool {
		for i := 0; i < bits; i++ {
			if (a[i/8]>>(7-i%8))&1 != (c[i/8]>>(7-i%8))&1 {
				return false
			}
		}
		return true
	}
	pos, left := 0, len(bc)
	for left > 0 {
		code, yesJump, noJump := bc[pos], int(bc[pos+1]), int(ne.Uint16(bc[pos+2:]))
		yes := true
		switch code {
		case bcJump:
			yes = false
		case bcSCond:
			cf, bits, port := int(bc[pos+4]), int(bc[pos+5]), int32(ne.Uint32(bc[pos+8:]))
			c := bc[pos+12:]
			switch {
			case port != -1 && port != int32(s.Local.Port()):
				yes = false
			case cf != afUnspec && cf != family:
				yes = family == afInet6 && cf == afInet && [12]byte(addr[:12]) == [12]byte{10: 0xff, 11: 0xff} &&
					prefixMatch(addr[12:], c, bits)
			case bits == 0:
			default:
				yes = prefixMatch(addr[:], c, bits)
			}
		}
		step := noJump
		if yes {
			step = yesJump
		}
		pos, left = pos+step, left-step
	}
	return left == 0
}

func bcAudit(bc []byte) bool {
	ne := binary.NativeEndian
	validCC := func(cc int) bool { // is the op cc bytes before the end reachable along "yes"?
		pos, left := 0, len(bc)
		for left >= 0 {
			if cc > left {
				return false
			}
			if cc == left {
				return true
			}
			yes := int(bc[pos+1])
			if yes < 4 || yes%4 != 0 {
				return false
			}
			pos, left = pos+yes, left-yes
		}
		return false
	}
	pos, left := 0, len(bc)
	for left > 0 {
		if left < 4 {
			return false
		}
		code, yes, no := bc[pos], int(bc[pos+1]), int(ne.Uint16(bc[pos+2:]))
		minLen := 4
		switch code {
		case bcSCond:
			minLen += 8
			if left < minLen {
				return false
			}
			addrLen := map[byte]int{afUnspec: 0, afInet: 4, afInet6: 16}
			n, ok := addrLen[bc[pos+4]]
			if !ok {
				return false
			}
			minLen += n
			if left < minLen || int(bc[pos+5]) > 8*n {
				return false
			}
		case bcJump:
		default:
			return false
		}
		if no < minLen || no > left+4 || no%4 != 0 {
			return false
		}
		if no < left && !validCC(left-no) {
			return false
		}
		if yes < minLen || yes > left+4 || yes%4 != 0 {
			return false
		}
		pos, left = pos+yes, left-yes
	}
	return left == 0
}

// TestEndpointFilter: the kernel would take the filter, and it lets through every socket the
// detector watches and none on another port or another specific address.
func TestEndpointFilter(t *testing.T) {
	ep := func(s string) config.Endpoint {
		e, err := config.ParseEndpoint(s)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	addrs := []string{"127.0.0.1", "127.0.0.2", "10.0.0.1", "::1", "::ffff:127.0.0.2", "::ffff:10.0.0.1", "2001:db8::1", "::"}
	for _, eps := range [][]config.Endpoint{
		{ep("8080")},
		{ep("127.0.0.2:8080")},
		{ep("0.0.0.0:8080"), ep("[::]:9090")},
		{ep("[::1]:8443"), ep("127.0.0.2:8080"), ep("[::ffff:10.0.0.1]:80"), ep("[2001:db8::1]:1")},
	} {
		bc := endpointFilter(eps)
		if !bcAudit(bc) {
			t.Errorf("%v: the kernel would refuse the filter % x", eps, bc)
			continue
		}
		for _, a := range addrs {
			addr := netip.MustParseAddr(a)
			for _, port := range []uint16{1, 80, 8080, 8443, 9090, 8081} {
				s := Socket{Local: netip.AddrPortFrom(addr, port), V6: addr.Is6()}
				watched, samePort, specific := false, false, true
				for _, e := range eps {
					watched = watched || e.Matches(addr, port)
					samePort = samePort || e.Port == port
					specific = specific && e.Addr.IsValid() && !e.Addr.IsUnspecified()
				}
				got := bcRun(bc, s)
				switch {
				case watched && !got:
					t.Errorf("%v: %s dropped by the filter, but watched", eps, s.Local)
				case !samePort && got:
					t.Errorf("%v: %s let through on another port", eps, s.Local)
				case specific && !watched && got:
					t.Errorf("%v: %s let through, another address", eps, s.Local)
				}
			}
		}
	}
}

// TestEndpointFilterMany: thousands of endpoints (an app listening on a port range) give a
// filter that fits its netlink attribute and that the kernel would take, or no filter at all;
// never one whose lengths were cut to 16 bits.
func TestEndpointFilterMany(t *testing.T) {
	for _, n := range []int{1000, 3000, 4000, 20000} {
		eps := make([]config.Endpoint, n)
		for i := range eps {
			eps[i] = config.Endpoint{Addr: netip.AddrFrom4([4]byte{127, 0, byte(i >> 8), byte(i)}), Port: uint16(10000 + i%50000)}
		}
		bc := endpointFilter(eps)
		if bc == nil {
			continue // no filter: the detector sees every socket
		}
		if len(bc)+4 > 1<<16-1 {
			t.Errorf("%d endpoints: a %d-byte filter does not fit a netlink attribute", n, len(bc))
			continue
		}
		if !bcAudit(bc) {
			t.Errorf("%d endpoints: the kernel would refuse the filter", n)
			continue
		}
		for _, e := range []config.Endpoint{eps[0], eps[n-1]} {
			if !bcRun(bc, Socket{Local: netip.AddrPortFrom(e.Addr, e.Port)}) {
				t.Errorf("%d endpoints: %s dropped by the filter, but watched", n, e)
			}
		}
	}
}
