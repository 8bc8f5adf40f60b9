package drainwatch

import (
	"slices"
	"strings"
	"testing"

	"github.com/drainit/drainit/internal/config"
)

// The fuzz targets check that no input panics and that whatever parses is usable as it is.
// Seeds live in testdata/fuzz/<target>/.

func FuzzParseProcNet(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, v6 bool) {
		n := 0
		err := parseProcNet(data, v6, nil, func(s *Socket) {
			n++
			if s.Local.Addr().Is6() != v6 || s.Remote.Addr().Is6() != v6 {
				t.Fatalf("address family of %v -> %v does not match v6=%v", s.Local, s.Remote, v6)
			}
			// The same lines read as a UDP table are judged without trouble.
			serving(s, portRange{lo: 32768, hi: 60999})
		})
		if err == nil {
			// Every socket is fed to a detector without trouble.
			d := newDetector([]config.Endpoint{{Port: 8080}})
			d.begin()
			_ = parseProcNet(data, v6, d.wants, d.add)
			if got := d.end(); got != 0 {
				t.Fatalf("the baseline counted %d new connections", got)
			}
		}
	})
}

// FuzzPortRange: the two sysctls that say which ports the kernel picks for a socket that binds
// none. What parses is a range, and a port is the kernel's only inside it and outside every
// reserved one.
func FuzzPortRange(f *testing.F) {
	f.Fuzz(func(t *testing.T, rangeFile, reservedFile []byte, port uint16) {
		lo, hi, ok := parsePortRange(rangeFile)
		if !ok {
			lo, hi = 32768, 60999
		} else if lo > hi {
			t.Fatalf("parsePortRange(%q) = %d-%d", rangeFile, lo, hi)
		}
		res, ok := parsePortList(reservedFile)
		if !ok && res != nil {
			t.Fatalf("parsePortList(%q) failed with %v", reservedFile, res)
		}
		for _, r := range res {
			if r[0] > r[1] {
				t.Fatalf("parsePortList(%q) has the range %d-%d", reservedFile, r[0], r[1])
			}
		}
		pr := portRange{lo: lo, hi: hi, reserved: res}
		reserved := slices.ContainsFunc(res, func(r [2]uint16) bool { return port >= r[0] && port <= r[1] })
		if want := port >= lo && port <= hi && !reserved; pr.has(port) != want {
			t.Fatalf("%+v has(%d) = %v, want %v", pr, port, !want, want)
		}
	})
}

// FuzzParseProcNetUnix: /proc/net/unix as the kernel prints it, a path holding newlines or
// spaces included. What parses is a listening socket with an inode, and its path is on one line.
func FuzzParseProcNetUnix(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		parseProcNetUnix(data, func(u unixListener) {
			if u.inode == 0 {
				t.Fatalf("a listener without an inode from %q", data)
			}
			if strings.ContainsRune(u.path, '\n') {
				t.Fatalf("path %q spans lines", u.path)
			}
		})
	})
}
