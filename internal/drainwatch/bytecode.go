package drainwatch

import (
	"encoding/binary"

	"github.com/drainit/drainit/internal/config"
)

// inet_diag bytecode (include/uapi/linux/inet_diag.h), the filter language of sock_diag dumps,
// used to have the kernel send only the sockets of the watched endpoints: on a shared network
// namespace (the rollout harness's pods all listen on one port, each at its own address) the
// other apps' connections never leave the kernel.
const (
	bcJump  = 1 // always takes the "no" branch
	bcSCond = 7 // the local end matches an inet_diag_hostcond: family, address prefix, port

	afUnspec, afInet, afInet6 = 0, 2, 10 // the address families, as Linux numbers them

	// maxFilterLen is the longest program an INET_DIAG_REQ_BYTECODE attribute holds: its
	// length, header (4 bytes) included, is a u16.
	maxFilterLen = 1<<16 - 1 - 4
)

// endpointFilter compiles "the local end is one of eps" (not empty). Each op is {code, yes, no}:
// the kernel runs it and jumps yes or no bytes ahead; landing exactly on the end accepts the
// socket, landing 4 bytes past it rejects it. The kernel only takes a jump target that is also
// reachable from the start along "yes" jumps, so the alternatives are chained the way ss(8)
// compiles an "or": each test, when it passes, falls into a jump to the end, and when it fails,
// goes on to the next test:
//
//	[S_COND][hostcond e1] [JMP → end] [S_COND][hostcond e2] [JMP → end] ... [S_COND][hostcond en]
//
// A hostcond is {family u8, prefix_len u8, pad, port int32 (host order)} and the address. An
// endpoint with any address is AF_UNSPEC with no address; an IPv4 address also matches the
// v4-mapped form in IPv6 sockets. The filter lets through at least what Endpoint.matches takes
// (an IPv4 wildcard also lets IPv6 sockets on its port through): the detector decides.
//
// The filter travels in one netlink attribute, whose length is 16 bits, and the "no" jumps are
// 16 bits too: with thousands of endpoints (about 3,270 of 16-byte tests) the program cannot be
// said. Then endpointFilter returns nil, no filter: the kernel sends every socket and the
// detector picks, at a cost the CPU budget accounts for. (Cut to 16 bits, the lengths made a
// request whose meaning depended on how the kernel read the truncated attribute.)
func endpointFilter(eps []config.Endpoint) []byte {
	cond := func(e config.Endpoint) (family, bits byte, addr []byte) {
		switch a := e.Addr; {
		case !a.IsValid(), a.IsUnspecified():
			return afUnspec, 0, nil
		case a.Is4(), a.Is4In6():
			b := a.Unmap().As4() // matches IPv4 sockets and v4-mapped ends of IPv6 ones
			return afInet, 32, b[:]
		default:
			b := a.As16()
			return afInet6, 128, b[:]
		}
	}
	condLen := func(e config.Endpoint) int { _, _, a := cond(e); return 4 + 8 + len(a) }
	total := 0
	for i, e := range eps {
		total += condLen(e)
		if i < len(eps)-1 {
			total += 4 // the jump
		}
	}
	if total > maxFilterLen {
		return nil
	}
	b := make([]byte, 0, total)
	ne := binary.NativeEndian
	op := func(code, yes byte, no int) {
		b = append(b, code, yes, 0, 0)
		ne.PutUint16(b[len(b)-2:], uint16(no))
	}
	for i, e := range eps {
		at, n := len(b), condLen(e)
		last := i == len(eps)-1
		fail := n + 4 // past the jump: the next test; after the last test, 4 past the end: reject
		op(bcSCond, byte(n), fail)
		family, bits, addr := cond(e)
		b = append(b, family, bits, 0, 0, 0, 0, 0, 0)
		ne.PutUint32(b[len(b)-4:], uint32(e.Port))
		b = append(b, addr...)
		if !last {
			op(bcJump, 4, total-(at+n))
		}
	}
	return b
}
