package drainwatch

import (
	"testing"
)

// The fuzz targets check that no input panics and that whatever parses is usable as it is.
// Seeds live in testdata/fuzz/<target>/.

func FuzzParseEndpoint(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseEndpoint(s)
		if err != nil {
			return
		}
		if e.Port == 0 {
			t.Fatalf("ParseEndpoint(%q) accepted port 0", s)
		}
		if e.Addr.Zone() != "" {
			t.Fatalf("ParseEndpoint(%q) accepted a zone", s)
		}
		// What is accepted prints back to something that parses to the same endpoint.
		back, err := ParseEndpoint(e.String())
		if err != nil || back != e {
			t.Fatalf("ParseEndpoint(%q) = %v; its String %q parses to %v, %v", s, e, e.String(), back, err)
		}
	})
}

func FuzzParseProcNet(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, v6 bool) {
		n := 0
		err := parseProcNet(data, v6, nil, func(s *Socket) {
			n++
			if s.Local.Addr().Is6() != v6 || s.Remote.Addr().Is6() != v6 {
				t.Fatalf("address family of %v -> %v does not match v6=%v", s.Local, s.Remote, v6)
			}
		})
		if err == nil {
			// Every socket is fed to a detector without trouble.
			d := newDetector([]Endpoint{{Port: 8080}})
			d.begin()
			_ = parseProcNet(data, v6, d.wants, d.add)
			if got := d.end(); got != 0 {
				t.Fatalf("the baseline counted %d new connections", got)
			}
		}
	})
}
