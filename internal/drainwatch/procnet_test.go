package drainwatch

import (
	"encoding/binary"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/procfs"

	"github.com/drainit/drainit/integration/testenv"
)

// littleEndian skips a test whose fixtures are tables as a little-endian kernel prints them
// (addresses are 32-bit words in host order).
func littleEndian(t testing.TB) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		testenv.SkipElsewhere(t, "the fixtures are tables of a little-endian kernel")
	}
}

func readTable(t testing.TB, path string) []Socket {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []Socket
	if err := parseProcNet(data, strings.HasSuffix(path, "6"), nil, func(s *Socket) { out = append(out, *s) }); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}

func TestParseProcNet(t *testing.T) {
	littleEndian(t)
	got := readTable(t, "testdata/tables/ipv6/1.tcp6")
	ap := netip.MustParseAddrPort
	want := []Socket{
		{Local: ap("[::]:8080"), Remote: ap("[::]:0"), State: Listen, Inode: 1000, V6: true, UID: 1000},
		{Local: ap("[::1]:9090"), Remote: ap("[::]:0"), State: Listen, Inode: 1001, V6: true, UID: 1000},
		{Local: ap("[::1]:8080"), Remote: ap("[::1]:50000"), State: Established, Inode: 2001, V6: true, UID: 1000},
		{Local: ap("[::ffff:127.0.0.1]:8080"), Remote: ap("[::ffff:127.0.0.1]:50001"), State: Established, Inode: 2002, V6: true, UID: 1000},
		{Local: ap("[2001:db8::1]:8080"), Remote: ap("[2001:db8::2]:50002"), State: Established, Inode: 2003, V6: true, UID: 1000},
		{Local: ap("[::1]:9090"), Remote: ap("[::1]:50003"), State: Established, Inode: 2004, V6: true, UID: 1000},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d sockets, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("socket %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	v4 := readTable(t, "testdata/tables/new/1.tcp")
	if s := v4[4]; s.Local != ap("10.0.0.5:8080") || s.Remote != ap("10.0.0.9:53248") || s.State != SynRecv || s.Inode != 0 || s.V6 {
		t.Errorf("SYN_RECV line = %+v", s)
	}
}

// TestParseProcNetAsProcfs checks the parser against prometheus/procfs's on every fixture and
// on this machine's own tables.
func TestParseProcNetAsProcfs(t *testing.T) {
	littleEndian(t) // procfs assumes it
	files, _ := filepath.Glob("testdata/tables/*/*.tcp*")
	for _, live := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		if data, err := os.ReadFile(live); err == nil {
			p := filepath.Join(t.TempDir(), filepath.Base(live))
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			files = append(files, p)
		}
	}
	if len(files) < 10 {
		t.Fatalf("only %d tables to compare", len(files))
	}
	for _, f := range files {
		ours := readTable(t, f)
		theirs := procfsTable(t, f)
		if len(ours) != len(theirs) {
			t.Errorf("%s: %d sockets, procfs %d", f, len(ours), len(theirs))
			continue
		}
		for i, s := range ours {
			o := theirs[i]
			if !net.IP(s.Local.Addr().AsSlice()).Equal(o.LocalAddr) ||
				!net.IP(s.Remote.Addr().AsSlice()).Equal(o.RemAddr) || uint64(s.Local.Port()) != o.LocalPort ||
				uint64(s.Remote.Port()) != o.RemPort || uint64(s.State) != o.St || s.Inode != o.Inode {
				t.Errorf("%s line %d: %+v, procfs %+v", f, i+2, s, *o)
			}
		}
	}
}

// procfsTable parses a table file with procfs, which wants it at <root>/net/tcp{,6}.
func procfsTable(t testing.TB, file string) procfs.NetTCP {
	t.Helper()
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	name := "tcp"
	if strings.HasSuffix(file, "6") {
		name = "tcp6"
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "net", name), data, 0o644); err != nil {
		t.Fatal(err)
	}
	fs, err := procfs.NewFS(root)
	if err != nil {
		t.Fatal(err)
	}
	var tab procfs.NetTCP
	if name == "tcp" {
		//lint:ignore SA1019 the reference the parser is checked against
		tab, err = fs.NetTCP()
	} else {
		//lint:ignore SA1019 the reference the parser is checked against
		tab, err = fs.NetTCP6()
	}
	if err != nil {
		t.Fatalf("procfs on %s: %v", file, err)
	}
	return tab
}

func TestParseProcNetErrors(t *testing.T) {
	const header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	const good = "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1000 1 0000000000000000 0 0 0 10 0\n"
	for _, tc := range []struct {
		name, data, want string
		v6               bool
	}{
		{"no header", good, "header line is missing", false},
		{"short line", header + good + "   1: 0100007F:1F90 00000000:0000 0A\n", "line 3: 4 fields", false},
		{"bad address", header + strings.Replace(good, "0100007F", "0100007G", 1), "line 2: bad local address", false},
		{"IPv4 line read as IPv6", header + good, "bad local address", true},
		{"bad state", header + strings.Replace(good, " 0A ", " 0AB ", 1), "bad state", false},
		{"bad inode", header + strings.Replace(good, " 1000 1 ", " 10x0 1 ", 1), "bad inode", false},
		{"no port", header + strings.Replace(good, "0100007F:1F90", "0100007F1F90A", 1), "bad local address", false},
	} {
		err := parseProcNet([]byte(tc.data), tc.v6, nil, func(*Socket) {})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to say %q", tc.name, err, tc.want)
		}
	}
	n := 0
	if err := parseProcNet([]byte(header+good+"\n"+good), false, nil, func(*Socket) { n++ }); err != nil || n != 2 {
		t.Errorf("blank line and no final newline: %d sockets, %v", n, err)
	}
}
