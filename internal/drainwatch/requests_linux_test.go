package drainwatch

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/integration/testenv"

	"github.com/drainit/drainit/internal/config"
)

// infoAttr is an INET_DIAG_INFO attribute: a struct tcp_info of n bytes with the two fields
// the drain reads.
func infoAttr(n int, lastDataRecvMS uint32, bytesReceived uint64) []byte {
	v := make([]byte, n)
	if n >= tcpInfoMinLen {
		binary.NativeEndian.PutUint32(v[tcpInfoLastDataRecv:], lastDataRecvMS)
		binary.NativeEndian.PutUint64(v[tcpInfoBytesReceived:], bytesReceived)
	}
	return attr(attrInfo, v)
}

func attr(typ uint16, v []byte) []byte {
	a := make([]byte, unix.SizeofNlAttr, unix.SizeofNlAttr+len(v)+3)
	binary.NativeEndian.PutUint16(a[0:], uint16(unix.SizeofNlAttr+len(v)))
	binary.NativeEndian.PutUint16(a[2:], typ)
	a = append(a, v...)
	for len(a)%unix.NLA_ALIGNTO != 0 {
		a = append(a, 0)
	}
	return a
}

// TestParseDiagTCPInfo: the tcp_info after a socket's inet_diag_msg gives what it has received
// and when last, found among other attributes; a tcp_info too short for those fields (a kernel
// before 4.1), or attributes whose lengths lie, leave the socket without it, never misread.
func TestParseDiagTCPInfo(t *testing.T) {
	ap := netip.MustParseAddrPort
	sock := diagMsg(Established, ap("10.0.0.1:80"), ap("10.0.0.2:5000"), 7)
	binary.NativeEndian.PutUint64(sock[44:], 0xfeedbeef01)
	for _, c := range []struct {
		name  string
		attrs []byte
		want  TCPInfo
	}{
		{"info alone", infoAttr(232, 1234, 5678), TCPInfo{OK: true, LastDataRecv: 1234 * time.Millisecond, BytesReceived: 5678}},
		{"after another attribute", append(attr(1, []byte{1, 2, 3}), infoAttr(tcpInfoMinLen, 7, 9)...), TCPInfo{OK: true, LastDataRecv: 7 * time.Millisecond, BytesReceived: 9}},
		{"too short", infoAttr(104, 0, 0), TCPInfo{}},
		{"none", nil, TCPInfo{}},
		{"a length past the message", func() []byte { a := infoAttr(232, 1, 2); binary.NativeEndian.PutUint16(a, 400); return a }(), TCPInfo{}},
		{"a length under a header", func() []byte { a := infoAttr(232, 1, 2); binary.NativeEndian.PutUint16(a, 2); return a }(), TCPInfo{}},
	} {
		msg := nlmsg(sockDiagByFamily, 3, -1, append(append([]byte(nil), sock...), c.attrs...))
		var got []Socket
		var s Socket
		if _, err := parseDiag(msg, 3, &s, func(s *Socket) { got = append(got, *s) }); err != nil || len(got) != 1 {
			t.Fatalf("%s: %d sockets, %v", c.name, len(got), err)
		}
		if got[0].Info != c.want || got[0].Cookie != 0xfeedbeef01 || got[0].Inode != 7 || got[0].Local != ap("10.0.0.1:80") {
			t.Errorf("%s: %+v, want info %+v, the cookie, inode 7 and 10.0.0.1:80", c.name, got[0], c.want)
		}
	}
}

// TestRequestWatchLive: on the kernel's own table, an open connection that receives data counts
// once per poll it received data in, one that is quiet does not, and one that received data
// lately is busy; connections to other ports are not looked at.
func TestRequestWatchLive(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	dial := func(l net.Listener) (client, server net.Conn) {
		t.Helper()
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(); s.Close() })
		return c, s
	}
	send := func(c net.Conn, s net.Conn) {
		t.Helper()
		if _, err := c.Write([]byte("GET / HTTP/1.1\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 64)
		if _, err := s.Read(buf); err != nil { // received: the kernel has counted it
			t.Fatal(err)
		}
	}
	busyC, busyS := dial(ln)
	_, _ = dial(ln) // a quiet one
	otherC, otherS := dial(other)
	ep := ln.Addr().(*net.TCPAddr).AddrPort()
	w := newRequestWatch([]config.Endpoint{{Addr: ep.Addr(), Port: ep.Port()}}, true, false)
	if w == nil {
		testenv.SkipUnlessCI(t, "no netlink sock_diag here")
	}
	defer w.close()
	// The polls' times are made up, a second apart, so that countEvery never holds a count back.
	at := time.Now()
	poll := func(within time.Duration) (int, int, error) {
		at = at.Add(time.Second)
		return w.poll(at, within)
	}
	if active, _, err := poll(time.Hour); err != nil || active != 0 {
		t.Fatalf("baseline: %d active, %v; want 0", active, err)
	}
	send(busyC, busyS)
	send(otherC, otherS)
	if active, busy, err := poll(time.Minute); err != nil || active != 1 || busy < 1 {
		t.Errorf("after a request on one connection: %d active, %d busy, %v; want 1 and at least 1", active, busy, err)
	}
	if active, _, err := poll(0); err != nil || active != 0 {
		t.Errorf("with nothing sent since: %d active, %v; want 0", active, err)
	}
	send(busyC, busyS)
	send(busyC, busyS)
	if active, _, err := poll(0); err != nil || active != 1 {
		t.Errorf("after two requests on one connection: %d active, %v; want it counted once", active, err)
	}

	// Polls 20 ms apart with data at each: one connection counts at most once per countEvery,
	// and data held back is counted once countEvery has passed, even with none since.
	counted := 0
	for range 10 { // 200 ms
		send(busyC, busyS)
		at = at.Add(20 * time.Millisecond)
		n, _, err := w.poll(at, 0)
		if err != nil {
			t.Fatal(err)
		}
		counted += n
	}
	if counted < 1 || counted > 2 {
		t.Errorf("data at 10 polls over 200 ms counted %d times, want 1 or 2 (once per %s)", counted, countEvery)
	}
	send(busyC, busyS)
	at = at.Add(20 * time.Millisecond)
	if n, _, _ := w.poll(at, 0); n != 0 {
		t.Errorf("data 20 ms after a count counted at once (%d)", n)
	}
	at = at.Add(countEvery)
	if n, _, _ := w.poll(at, 0); n != 1 {
		t.Errorf("data held back was not counted %s later, with none since (%d)", countEvery, n)
	}

	// A connection closed between two polls: its last data may have come unseen, or been held
	// back. One that received data while watched counts once more at the poll that finds it
	// gone; one that never did, not.
	closed := func(c, s net.Conn) {
		t.Helper()
		c.Close()
		s.Close()
		waitGone(t, w, s.LocalAddr(), c.LocalAddr())
	}
	send(busyC, busyS) // held back: 20 ms after the last count
	at = at.Add(20 * time.Millisecond)
	if n, _, _ := w.poll(at, 0); n != 0 {
		t.Fatalf("data 20 ms after a count counted at once (%d)", n)
	}
	send(busyC, busyS) // unseen: the connection closes before the next poll
	closed(busyC, busyS)
	at = at.Add(20 * time.Millisecond)
	if n, _, _ := w.poll(at, 0); n != 1 {
		t.Errorf("a connection that carried requests, its last held back or unseen, closed between two polls: counted %d, want 1", n)
	}
	idleC, idleS := dial(ln)
	at = at.Add(time.Second)
	if n, _, _ := w.poll(at, 0); n != 0 {
		t.Fatalf("a new connection with nothing sent counted %d times by the request watch, want 0 (the new-connection count's)", n)
	}
	closed(idleC, idleS)
	at = at.Add(time.Second)
	if n, _, _ := w.poll(at, 0); n != 0 {
		t.Errorf("an idle connection closed: counted %d, want 0", n)
	}
}

// waitGone waits until the kernel's table no longer holds the connection between a and b in
// ESTABLISHED (the close has been sent and acknowledged both ways).
func waitGone(t *testing.T, w *requestWatch, a, b net.Addr) {
	t.Helper()
	want := [2]netip.AddrPort{a.(*net.TCPAddr).AddrPort(), b.(*net.TCPAddr).AddrPort()}
	deadline := time.Now().Add(5 * time.Second)
	for {
		found := false
		err := w.diag.dump(unix.AF_INET, 1<<Established, nil, func(s *Socket) {
			if s.Local == want[0] && s.Remote == want[1] || s.Local == want[1] && s.Remote == want[0] {
				found = true
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if !found {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the connection %v - %v is still established 5 s after both ends closed it", a, b)
		}
		time.Sleep(time.Millisecond)
	}
}

// The seed corpus of FuzzParseDiag holds a socket with its tcp_info; write it with
// DRAINWATCH_WRITE_SEEDS=1.
func TestWriteDiagInfoSeed(t *testing.T) {
	testenv.SkipUnlessAsked(t, "DRAINWATCH_WRITE_SEEDS", "writes the seed")
	ap := netip.MustParseAddrPort
	sock := append(diagMsg(Established, ap("10.0.0.1:80"), ap("10.0.0.2:5000"), 7), append(attr(1, []byte{1}), infoAttr(232, 5, 6)...)...)
	msg := append(nlmsg(sockDiagByFamily, 1, -1, sock), nlmsg(unix.NLMSG_DONE, 1, -1, errnoBody(0))...)
	body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\nuint32(1)\n", msg)
	if err := os.WriteFile(filepath.Join("testdata/fuzz/FuzzParseDiag", "tcp-info"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
