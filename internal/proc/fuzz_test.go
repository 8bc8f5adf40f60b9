package proc

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// The fuzz targets feed arbitrary bytes to each reader of a /proc file. Nothing may panic, and
// what parses is what the kernel's format means. Seeds live in testdata/fuzz/<target>/: lines
// read on a real Linux 6.18 (/proc/PID/stat of a process named "(a) b)", of a kernel thread,
// /proc/PID/net/snmp, fd link targets) and broken ones.

// The stat lines of processes whose names hold spaces and parentheses, and lines that are
// not stat lines (the kernel writes 52 fields; ParseStat reads up to the seventh after the name,
// the flags, and a line cut before it is not a stat line).
func TestStatParent(t *testing.T) {
	const tail = " S 1 14222 10388 0 -1 4194304 130 0 0 0 0 0 0 0 20 0 1 0 1753715 2990080 413\n"
	good := map[string]int{
		"14230 ((a) b))" + tail:               1,
		"2 (kthreadd) S 0 0 0 0 -1 2129984\n": 0,
		"7 (a b) c) d) R 4 7 7 0 -1 0\n":      4,
		"7 () R 4 7 7 0 -1 0":                 4,
		"7 (x\ny) R 4 7 7 0 -1 0\n":           4, // a name can hold a newline
		"7 (sh) S 4194304 7 7 0 -1 0\n":       4194304,
	}
	for line, want := range good {
		if st, err := ParseStat([]byte(line)); err != nil || st.PPID != want {
			t.Errorf("ParseStat(%q).PPID = %d, %v; want %d", line, st.PPID, err, want)
		}
	}
	for _, line := range []string{
		"", "7", "7 (sh", "7 (sh) S", "7 (sh) S\n", "7 sh) S 4", "(sh) S 4", "x (sh) S 4", "7(sh) S 4",
		"7 (sh) S -1", "7 (sh) S +4", "7 (sh) S 4x", "7 (sh) SS 4", "7 (sh) S 99999999999",
		"7 (sh) S 4 (oops)", // a ')' after the name's: no stat line
	} {
		if st, err := ParseStat([]byte(line)); err == nil {
			t.Errorf("ParseStat(%q).PPID = %d, want an error", line, st.PPID)
		}
	}
}

func FuzzStatParent(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		if st, err := ParseStat(b); err == nil && st.PPID < 0 {
			t.Fatalf("ParseStat(%q).PPID = %d", b, st.PPID)
		}
		// The same bytes as a process's name: whatever it holds, the line around it parses, to
		// the parent written after the name's last ')'.
		line := fmt.Sprintf("4321 (%s) S 17 4321 4321 0 -1 4194304 102 0 0 0 0 0 0 0 20 0 1 0 1753766\n", b)
		if st, err := ParseStat([]byte(line)); err != nil || st.PPID != 17 {
			t.Fatalf("name %q: ParseStat.PPID = %d, %v; want 17", b, st.PPID, err)
		}
	})
}

func TestSocketInode(t *testing.T) {
	for link, want := range map[string]uint64{"socket:[1421656]": 1421656, "socket:[0]": 0, "socket:[18446744073709551615]": 1<<64 - 1} {
		if got, ok := socketInode(link); !ok || got != want {
			t.Errorf("socketInode(%q) = %d, %v; want %d", link, got, ok, want)
		}
	}
	for _, link := range []string{"pipe:[1421656]", "/tmp/socket:[1]", "socket:[12", "socket:[]", "socket:[-1]",
		"socket:[+1]", "socket:[1]x", "socket:[18446744073709551616]", "anon_inode:[eventfd]", ""} {
		if got, ok := socketInode(link); ok {
			t.Errorf("socketInode(%q) = %d, want no socket", link, got)
		}
	}
}

func FuzzSocketInode(f *testing.F) {
	f.Fuzz(func(t *testing.T, link string) {
		n, ok := socketInode(link)
		if !ok {
			return
		}
		// What is taken for a socket is exactly "socket:[N]", N with at most leading zeros more.
		num := strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")
		if "socket:["+num+"]" != link || strings.TrimLeft(num, "0") != strings.TrimLeft(strconv.FormatUint(n, 10), "0") {
			t.Fatalf("socketInode(%q) = %d", link, n)
		}
	})
}

// A real net/snmp (Linux 6.18), with its values as they were.
const snmp = `Ip: Forwarding DefaultTTL InReceives InHdrErrors InAddrErrors ForwDatagrams InUnknownProtos InDiscards InDelivers OutRequests OutDiscards OutNoRoutes ReasmTimeout ReasmReqds ReasmOKs ReasmFails FragOKs FragFails FragCreates OutTransmits
Ip: 2 64 3166005 0 0 0 0 0 3166005 3162530 0 0 0 0 0 0 0 0 0 3162530
IcmpMsg: InType3
IcmpMsg: 2
Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors
Tcp: 1 200 120000 -1 339583 %s 6123 228437 0 3165835 3162411 20 0 173447 0
Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
Udp: 269 0 0 271 0 0 0 0 0
`

func TestPassiveOpensParse(t *testing.T) {
	if n, err := parsePassiveOpens([]byte(fmt.Sprintf(snmp, "333371"))); err != nil || n != 333371 {
		t.Errorf("real net/snmp: %d, %v; want 333371", n, err)
	}
	for name, in := range map[string]string{
		"no value":        "Tcp: ActiveOpens PassiveOpens\nTcp: 1\n",
		"not a number":    fmt.Sprintf(snmp, "-1"),
		"no values line":  "Tcp: ActiveOpens PassiveOpens\n",
		"no counter":      "Tcp: ActiveOpens\nTcp: 1\n",
		"empty":           "",
		"a line too long": "Tcp: " + strings.Repeat("x ", 40000) + "PassiveOpens\nTcp: 1\n",
	} {
		if n, err := parsePassiveOpens([]byte(in)); err == nil {
			t.Errorf("%s: %d, want an error", name, n)
		}
	}
}

func FuzzPassiveOpens(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, v uint64) {
		if _, err := parsePassiveOpens(data); err == nil && !bytes.Contains(data, []byte("PassiveOpens")) {
			t.Fatalf("%q: a counter read from a file without one", data)
		}
		// Any value in a real file's place reads back.
		if n, err := parsePassiveOpens([]byte(fmt.Sprintf(snmp, strconv.FormatUint(v, 10)))); err != nil || n != v {
			t.Fatalf("PassiveOpens %d read as %d, %v", v, n, err)
		}
	})
}
