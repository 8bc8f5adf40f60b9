package signals

import (
	"testing"
)

// The fuzz targets check that no input panics and that whatever parses is internally consistent.
// Seeds live in testdata/fuzz/<target>/.

func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		sig, err := Parse(s)
		if err != nil {
			return
		}
		if sig < 1 || sig > MaxSignal {
			t.Fatalf("Parse(%q) = %d, out of range", s, sig)
		}
		if sig == 32 || sig == 33 {
			return
		}
		if back, err := Parse(Name(sig)); err != nil || back != sig {
			t.Fatalf("Parse(Name(%d)) = %v, %v", sig, back, err)
		}
	})
}

func FuzzParseRewrite(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRewrite(s)
		if err != nil {
			return
		}
		for from, to := range r {
			if !Forwardable(from) {
				t.Fatalf("ParseRewrite(%q) accepted unforwardable source %d", s, from)
			}
			if to < 0 || to > MaxSignal {
				t.Fatalf("ParseRewrite(%q) produced target %d", s, to)
			}
		}
	})
}

func FuzzParseExitMap(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseExitMap(s)
		if err != nil {
			return
		}
		for from, to := range m {
			if from < 0 || from > 255 || to < 0 || to > 255 {
				t.Fatalf("ParseExitMap(%q) produced %d:%d", s, from, to)
			}
		}
	})
}
