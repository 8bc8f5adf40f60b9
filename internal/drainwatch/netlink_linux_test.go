package drainwatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// testdata/sockdiag/tcp4.bin and tcp6.bin are sock_diag dumps answering request 1, read from a
// real Linux 6.18 (x86-64, so little-endian headers): the messages of one test program's sockets
// on port 18299, verbatim, then the dump's NLMSG_DONE. Each socket's message is the 72-byte
// inet_diag_msg followed by attributes the kernel adds unasked (INET_DIAG_SHUTDOWN,
// INET_DIAG_CLASS_ID, INET_DIAG_CGROUP_ID, INET_DIAG_SOCKOPT, and INET_DIAG_SKV6ONLY for IPv6
// sockets): 124 or 132 bytes. The NLMSG_DONE carries a 4-byte int, 0 for a dump that ended well.

// nlmsg builds a netlink message: header then body, padded to 4 bytes; length, when not -1,
// is what the header claims instead of the true length.
func nlmsg(typ uint16, seq uint32, length int, body []byte) []byte {
	m := make([]byte, unix.NLMSG_HDRLEN, unix.NLMSG_HDRLEN+len(body)+3)
	if length < 0 {
		length = unix.NLMSG_HDRLEN + len(body)
	}
	ne := binary.NativeEndian
	ne.PutUint32(m[0:], uint32(length))
	ne.PutUint16(m[4:], typ)
	ne.PutUint16(m[6:], unix.NLM_F_MULTI)
	ne.PutUint32(m[8:], seq)
	m = append(m, body...)
	for len(m)%unix.NLMSG_ALIGNTO != 0 {
		m = append(m, 0)
	}
	return m
}

// errnoBody is the int an NLMSG_DONE or NLMSG_ERROR carries: minus the errno.
func errnoBody(e unix.Errno) []byte {
	return binary.NativeEndian.AppendUint32(nil, uint32(-int32(e)))
}

// diagMsg builds an IPv4 struct inet_diag_msg.
func diagMsg(st State, local, remote netip.AddrPort, inode uint32) []byte {
	m := make([]byte, inetDiagMsgLen)
	m[0], m[1] = unix.AF_INET, byte(st)
	binary.BigEndian.PutUint16(m[4:], local.Port())
	binary.BigEndian.PutUint16(m[6:], remote.Port())
	l, r := local.Addr().As4(), remote.Addr().As4()
	copy(m[8:], l[:])
	copy(m[24:], r[:])
	binary.NativeEndian.PutUint32(m[68:], inode)
	return m
}

func readDump(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/sockdiag/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func collect(b []byte, seq uint32) (got []string, done bool, err error) {
	var s Socket
	done, err = parseDiag(b, seq, &s, func(s *Socket) {
		got = append(got, fmt.Sprintf("%v %v->%v inode=%d v6=%v", s.State, s.Local, s.Remote, s.Inode, s.V6))
	})
	return got, done, err
}

func TestParseDiagRealDump(t *testing.T) {
	st := func(s State) string { return s.String() }
	for file, want := range map[string][]string{
		"tcp4.bin": {
			st(Listen) + " 127.0.0.1:18299->0.0.0.0:0 inode=1776827 v6=false",
			st(FinWait1) + " 127.0.0.1:40476->127.0.0.1:18299 inode=0 v6=false",
			st(CloseWait) + " 127.0.0.1:18299->127.0.0.1:40476 inode=1776830 v6=false",
		},
		"tcp6.bin": {
			st(Listen) + " [::1]:18299->[::]:0 inode=1776831 v6=true",
			st(Established) + " [::1]:18299->[::1]:55464 inode=1776834 v6=true",
			st(Established) + " [::1]:55464->[::1]:18299 inode=1776833 v6=true",
		},
	} {
		b := readDump(t, file)
		got, done, err := collect(b, 1)
		if err != nil || !done || !slices.Equal(got, want) {
			t.Errorf("%s: done=%v err=%v\n got %q\nwant %q", file, done, err, got, want)
		}
		// The same messages answering an earlier request are skipped, DONE included.
		if got, done, err := collect(b, 2); err != nil || done || len(got) != 0 {
			t.Errorf("%s as another request's: %q, done=%v, %v", file, got, done, err)
		}
		// Cut after the first message: its sockets now, the rest in the next datagram.
		first := int(binary.NativeEndian.Uint32(b))
		if got, done, err := collect(b[:first], 1); err != nil || done || !slices.Equal(got, want[:1]) {
			t.Errorf("%s, first message alone: %q, done=%v, %v", file, got, done, err)
		}
	}
}

// Lengths that lie, messages cut short and ends that carry an error: each is an error or the
// plain end, never a socket made of bytes that are not one, a read past the buffer or a loop.
func TestParseDiagMalformed(t *testing.T) {
	sock := diagMsg(Established, netip.MustParseAddrPort("10.0.0.1:80"), netip.MustParseAddrPort("10.0.0.2:5000"), 7)
	okMsg := nlmsg(sockDiagByFamily, 1, -1, sock)
	done := nlmsg(unix.NLMSG_DONE, 1, -1, errnoBody(0))
	cases := []struct {
		name    string
		b       []byte
		sockets int
		done    bool
		err     error // errors.Is; nil: none
		anyErr  bool
	}{
		{"empty", nil, 0, false, nil, false},
		{"less than a header", okMsg[:unix.NLMSG_HDRLEN-1], 0, false, nil, false},
		{"zero length", nlmsg(sockDiagByFamily, 1, 0, sock), 0, false, nil, true},
		{"length below a header", nlmsg(sockDiagByFamily, 1, unix.NLMSG_HDRLEN-1, sock), 0, false, nil, true},
		{"length past the buffer", nlmsg(sockDiagByFamily, 1, len(okMsg)+4, sock), 0, false, nil, true},
		{"length 4 GiB", nlmsg(sockDiagByFamily, 1, 1<<32-1, sock), 0, false, nil, true},
		{"message shorter than inet_diag_msg", nlmsg(sockDiagByFamily, 1, -1, sock[:inetDiagMsgLen-1]), 0, false, nil, true},
		{"unaligned length, then DONE", slices.Concat(nlmsg(sockDiagByFamily, 1, -1, append(sock, 1)), done), 1, true, nil, false},
		{"a socket then DONE", slices.Concat(okMsg, done), 1, true, nil, false},
		{"DONE with an errno", slices.Concat(okMsg, nlmsg(unix.NLMSG_DONE, 1, -1, errnoBody(unix.EINTR))), 1, false, unix.EINTR, true},
		{"DONE without its int", nlmsg(unix.NLMSG_DONE, 1, -1, nil), 0, true, nil, false},
		{"error", nlmsg(unix.NLMSG_ERROR, 1, -1, errnoBody(unix.ENOENT)), 0, false, unix.ENOENT, true},
		{"error without its int", nlmsg(unix.NLMSG_ERROR, 1, -1, []byte{1}), 0, false, nil, true},
		{"acknowledgement", nlmsg(unix.NLMSG_ERROR, 1, -1, errnoBody(0)), 0, true, nil, false},
		{"other types skipped", slices.Concat(nlmsg(unix.NLMSG_NOOP, 1, -1, nil), okMsg), 1, false, nil, false},
	}
	for _, c := range cases {
		got, done, err := collect(c.b, 1)
		if len(got) != c.sockets || done != c.done || (err != nil) != c.anyErr || c.err != nil && !errors.Is(err, c.err) {
			t.Errorf("%s: %d sockets, done=%v, err=%v; want %d, %v, %v", c.name, len(got), done, err, c.sockets, c.done, c.err)
		}
	}
}

// FuzzParseDiag feeds arbitrary bytes to the decoder as a datagram of a dump answering request
// seq. Nothing may panic or loop; each socket it reports has a whole message of its own, with
// addresses of the family it claims; an end and an error never come together; messages of
// other requests are never taken. Seeds live in testdata/fuzz/FuzzParseDiag/ (the real dumps
// above, and lying lengths).
func FuzzParseDiag(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte, seq uint32) {
		n := 0
		var s Socket
		done, err := parseDiag(b, seq, &s, func(s *Socket) {
			n++
			if s.Local.Addr().Is6() != s.V6 || s.Remote.Addr().Is6() != s.V6 || s.Local.Addr().Is4In6() && !s.V6 {
				t.Fatalf("%x: socket %+v with addresses of another family", b, s)
			}
		})
		if done && err != nil {
			t.Fatalf("%x: done with an error %v", b, err)
		}
		if n > len(b)/(unix.NLMSG_HDRLEN+inetDiagMsgLen) {
			t.Fatalf("%x: %d sockets from %d bytes", b, n, len(b))
		}
		// The messages of any other request are all skipped.
		other := seq + 1
		for hasSeq(b, other) {
			other++
		}
		m := 0
		if done, err := parseDiag(b, other, &s, func(*Socket) { m++ }); m != 0 || done {
			t.Fatalf("%x: %d sockets, done=%v (%v) from other requests' messages", b, m, done, err)
		}
	})
}

// hasSeq reports whether any well-formed message of b's chain carries seq.
func hasSeq(b []byte, seq uint32) bool {
	for len(b) >= unix.NLMSG_HDRLEN {
		l := int(binary.NativeEndian.Uint32(b))
		if l < unix.NLMSG_HDRLEN || l > len(b) {
			return false
		}
		if binary.NativeEndian.Uint32(b[8:]) == seq {
			return true
		}
		b = b[min(len(b), (l+3)&^3):]
	}
	return false
}
