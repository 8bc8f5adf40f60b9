package drainwatch

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/procfs"

	"github.com/drainit/drainit/internal/config"
)

// procNetLine prints a socket as the kernel prints a /proc/net/tcp line (net/ipv4/tcp_ipv4.c,
// get_tcp4_sock and get_timewait4_sock), padded to the same width.
func procNetLine(sl int, s Socket) string {
	hex := func(ap netip.AddrPort) string {
		a := ap.Addr().As4()
		return fmt.Sprintf("%08X:%04X", binary.NativeEndian.Uint32(a[:]), ap.Port())
	}
	var line string
	if s.State == TimeWait {
		line = fmt.Sprintf("%4d: %s %s %02X %08X:%08X %02X:%08X %08X %5d %8d %d %d %016x",
			sl, hex(s.Local), hex(s.Remote), uint8(s.State), 0, 0, 3, 0x1770, 0, 0, 0, 0, 3, 0xffff8881_2345_6780+uint64(sl))
	} else {
		line = fmt.Sprintf("%4d: %s %s %02X %08X:%08X %02X:%08X %08X %5d %8d %d %d %016x %d %d %d %d %d",
			sl, hex(s.Local), hex(s.Remote), uint8(s.State), 0, 0, 0, 0, 0, 1000, 0, s.Inode, 1, 0xffff8881_2345_6780+uint64(sl), 20, 4, 30, 10, -1)
	}
	return fmt.Sprintf("%-149s\n", line)
}

// table10k writes a /proc/net/tcp of 10,000 sockets, shaped like a busy server's: a listener on
// :8080, 4,000 connections to it and 1,000 of its TIME_WAITs, and 4,999 sockets that are not
// its (outgoing connections, another listener's). It returns the path and the listener.
func table10k(tb testing.TB) (string, config.Endpoint) {
	tb.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%-149s\n", "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode")
	local := netip.MustParseAddr("10.1.2.3")
	ln := config.Endpoint{Addr: netip.IPv4Unspecified(), Port: 8080}
	socks := []Socket{{Local: netip.AddrPortFrom(ln.Addr, ln.Port), Remote: netip.AddrPortFrom(ln.Addr, 0), State: Listen, Inode: 100000}}
	for i := range 9999 {
		peer := netip.AddrFrom4([4]byte{10, 9, byte(i >> 8), byte(i)})
		s := Socket{Local: netip.AddrPortFrom(local, 8080), Remote: netip.AddrPortFrom(peer, uint16(32768+i)), State: Established, Inode: uint64(200000 + i)}
		switch {
		case i >= 5000:
			s.Local, s.Remote = netip.AddrPortFrom(local, uint16(40000+i%20000)), netip.AddrPortFrom(peer, 443)
		case i >= 4000:
			s.State, s.Inode = TimeWait, 0
		}
		socks = append(socks, s)
	}
	for i, s := range socks {
		b.WriteString(procNetLine(i, s))
	}
	p := filepath.Join(tb.TempDir(), "tcp")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
	return p, ln
}

// TestTable10k checks the benchmark's table: 10,000 sockets, 5,000 of them the listener's.
func TestTable10k(t *testing.T) {
	littleEndian(t)
	p, ln := table10k(t)
	socks := readTable(t, p)
	if len(socks) != 10000 {
		t.Fatalf("%d sockets, want 10000", len(socks))
	}
	d := newDetector([]config.Endpoint{ln})
	d.observe(socks)
	if len(d.conns) != 5000 {
		t.Errorf("%d connections to the listener, want 5000", len(d.conns))
	}
	if n := len(procfsTable(t, p)); n != 10000 {
		t.Errorf("procfs reads %d sockets", n)
	}
}

// BenchmarkScan10k is one poll of the proc-net-tcp method on a 10,000-socket table, without the
// kernel's part (the table is a file): read, parse, and the detector's pass over the 5,000
// connections to the listener. "parse" is the parser alone; "procfs" is prometheus/procfs's
// reading and parsing of the same file.
func BenchmarkScan10k(b *testing.B) {
	p, ln := table10k(b)
	b.Run("drainwatch", func(b *testing.B) {
		d := newDetector([]config.Endpoint{ln})
		want, add := d.wants, d.add
		var buf []byte
		b.ReportAllocs()
		for b.Loop() {
			data, err := readAll(p, &buf)
			if err != nil {
				b.Fatal(err)
			}
			d.begin()
			if err := parseProcNet(data, false, want, add); err != nil {
				b.Fatal(err)
			}
			d.end()
		}
	})
	b.Run("parse", func(b *testing.B) {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		count := func(*Socket) { n++ }
		b.ReportAllocs()
		for b.Loop() {
			if err := parseProcNet(data, false, nil, count); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("procfs", func(b *testing.B) {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		root := b.TempDir() // procfs wants the table at <root>/net/tcp
		if err := os.Mkdir(filepath.Join(root, "net"), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "net", "tcp"), data, 0o644); err != nil {
			b.Fatal(err)
		}
		fs, err := procfs.NewFS(root)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			//lint:ignore SA1019 measured for the record: procfs is what the parser was chosen against
			if _, err := fs.NetTCP(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
