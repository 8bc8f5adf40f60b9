package hooks

import (
	"testing"
)

// The fuzz targets check that no input panics and that whatever parses is usable as it is.
// Seeds live in testdata/fuzz/<target>/.

func FuzzParseProbe(f *testing.F) {
	f.Fuzz(func(t *testing.T, spec string) {
		p, err := ParseProbe(spec)
		if err != nil {
			return
		}
		back, err := ParseProbe(p.String())
		if err != nil || back.String() != p.String() {
			t.Fatalf("ParseProbe(%q) = %s, which parses to %v, %v", spec, p, back, err)
		}
	})
}
