package drainwatch

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/drainit/drainit/internal/config"
)

// The scenarios are successive snapshots of the TCP table in testdata/tables/<name>/: N.tcp and
// N.tcp6 are snapshot N, as /proc/net/tcp and /proc/net/tcp6 print it.
func TestDetectorScenarios(t *testing.T) {
	littleEndian(t)
	ep := func(s string) config.Endpoint {
		e, err := config.ParseEndpoint(s)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	for _, tc := range []struct {
		name      string
		listeners []config.Endpoint
		want      []int // new connections in snapshot 1, 2, …
	}{
		// 1: one not yet accepted (inode 0), a SYN_RECV, one that came and went to TIME_WAIT, one
		// the client already closed (CLOSE_WAIT); not: another listener's connection, an
		// outgoing SYN_SENT from the port, the client end of a loopback connection.
		// 2: those move on (accepted, handshake done, LAST_ACK) and one more arrives. The
		// SYN_RECV counts at 2, once its handshake is done.
		{"new", []config.Endpoint{ep("0.0.0.0:8080")}, []int{3, 2}},
		// The same table again.
		{"none", []config.Endpoint{ep("127.0.0.1:8080")}, []int{0}},
		// Connections closing every way: the app closes first (FIN_WAIT1, FIN_WAIT2, TIME_WAIT,
		// its inode dropping to 0), the client does (CLOSE_WAIT, LAST_ACK), a reset (gone), a
		// TIME_WAIT expiring, an unaccepted one getting the client's FIN and then accepted.
		{"closing", []config.Endpoint{ep("0.0.0.0:8080")}, []int{0, 0, 0}},
		// A client reusing its port: TIME_WAIT back to ESTABLISHED; another inode on the same
		// 4-tuple; an accepted connection's 4-tuple unaccepted again. Not reuse: an unaccepted
		// connection getting its inode. Then ESTABLISHED back to SYN_RECV: a new handshake,
		// which counts once done.
		{"reuse", []config.Endpoint{ep("0.0.0.0:8080")}, []int{3, 0}},
		// A dual-stack [::]:8080 gets an IPv6 connection and an IPv4 one (v4-mapped in tcp6), an
		// IPv4 listener in tcp one more; another app's [::1]:9090 one is not counted. Then one
		// goes to TIME_WAIT and one closes: nothing new.
		{"ipv6", []config.Endpoint{ep("[::]:8080"), ep("127.0.0.1:8081")}, []int{3, 0}},
		// Two pods on one port, as the rollout harness runs them: only 127.0.0.2's count.
		{"shared", []config.Endpoint{ep("127.0.0.2:8080")}, []int{1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDetector(tc.listeners)
			if n := d.observe(snapshot(t, tc.name, 0)); n != 0 {
				t.Fatalf("baseline: %d new connections, want 0", n)
			}
			for i, want := range tc.want {
				if got := d.observe(snapshot(t, tc.name, i+1)); got != want {
					t.Errorf("snapshot %d: %d new connections, want %d", i+1, got, want)
				}
			}
		})
	}
}

func snapshot(t *testing.T, name string, n int) []Socket {
	t.Helper()
	var out []Socket
	for _, f := range []string{fmt.Sprintf("%d.tcp", n), fmt.Sprintf("%d.tcp6", n)} {
		p := filepath.Join("testdata/tables", name, f)
		if _, err := os.Stat(p); err == nil {
			out = append(out, readTable(t, p)...)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no snapshot %d in %s", n, name)
	}
	return out
}

// TestDetectorGoneAndBack: a 4-tuple that vanished from one snapshot and is back in the next is
// a new connection, even with the same inode-less state.
func TestDetectorGoneAndBack(t *testing.T) {
	ap := netip.MustParseAddrPort
	c := Socket{Local: ap("10.0.0.5:8080"), Remote: ap("10.0.0.9:40000"), State: TimeWait}
	d := newDetector([]config.Endpoint{{Port: 8080}})
	for i, tc := range []struct {
		snap []Socket
		want int
	}{
		{[]Socket{c}, 0},
		{nil, 0},
		{[]Socket{c}, 1},
		{[]Socket{c, c}, 0}, // listed twice in one snapshot: still the same one
	} {
		if got := d.observe(tc.snap); got != tc.want {
			t.Errorf("snapshot %d: %d new, want %d", i, got, tc.want)
		}
	}
	if len(d.conns) != 1 {
		t.Errorf("the detector keeps %d connections, want 1", len(d.conns))
	}
}

// Half-open connections (SYNs, spoofed or not, whose handshake never completes) are not new
// connections: a flood of them cannot hold a drain to its maximum. One whose handshake completes
// counts once, when a snapshot finds it past SYN_RECV.
func TestDetectorHalfOpen(t *testing.T) {
	local := netip.MustParseAddrPort("10.0.0.5:8080")
	conn := func(i int, st State) Socket {
		return Socket{Local: local, Remote: netip.AddrPortFrom(netip.AddrFrom4([4]byte{203, 0, 113, byte(i)}), 40000), State: st}
	}
	d := newDetector([]config.Endpoint{{Port: 8080}})
	if n := d.observe(nil); n != 0 {
		t.Fatalf("baseline: %d", n)
	}
	var flood []Socket
	for i := range 200 {
		flood = append(flood, conn(i, SynRecv))
	}
	for round := range 3 {
		if n := d.observe(flood); n != 0 {
			t.Fatalf("round %d: %d half-open connections counted as new", round, n)
		}
	}
	// One completes its handshake; one arrives already established; the rest vanish.
	if n := d.observe([]Socket{conn(7, Established), conn(250, Established)}); n != 2 {
		t.Errorf("a handshake completed and a new connection: %d new, want 2", n)
	}
	if n := d.observe([]Socket{conn(7, TimeWait), conn(250, CloseWait)}); n != 0 {
		t.Errorf("the same two closing: %d new, want 0", n)
	}
}
