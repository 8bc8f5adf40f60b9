package config

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"
)

// The hook specs' fuzz targets: no input panics, and whatever parses is usable as it is. Seeds
// live in testdata/fuzz/<target>/. (The ready probe's is package hooks', which round-trips it
// through the probe it builds.)

func FuzzParseCommand(f *testing.F) {
	f.Fuzz(func(t *testing.T, spec string) {
		argv, err := ParseCommand(spec)
		if err != nil {
			return
		}
		if len(argv) == 0 || argv[0] == "" {
			t.Fatalf("ParseCommand(%q) accepted an empty command %q", spec, argv)
		}
		for _, a := range argv {
			if strings.IndexByte(a, 0) >= 0 {
				t.Fatalf("ParseCommand(%q) accepted a NUL byte: %q", spec, argv)
			}
		}
		// The JSON form must give back any command exactly (JSON strings cannot carry the bytes
		// of invalid UTF-8, which the plain form passes on as they are).
		for _, a := range argv {
			if !utf8.ValidString(a) {
				return
			}
		}
		js, _ := json.Marshal(argv)
		back, err := ParseCommand(string(js))
		if err != nil || strings.Join(back, "\x00") != strings.Join(argv, "\x00") {
			t.Fatalf("ParseCommand(%s) = %q, %v; want %q back", js, back, err, argv)
		}
	})
}

func FuzzParseCall(f *testing.F) {
	f.Fuzz(func(t *testing.T, spec string) {
		c, err := ParseCall(spec)
		if err != nil {
			return
		}
		if c.URL.Scheme != "http" || c.URL.Host == "" {
			t.Fatalf("ParseCall(%q) accepted URL %q", spec, c.URL)
		}
		// Whatever is accepted can be sent: the request is built the way the hook builds it.
		req, err := http.NewRequest(c.Method, c.URL.String(), nil)
		if err != nil {
			t.Fatalf("ParseCall(%q) accepted a request net/http refuses: %v", spec, err)
		}
		for k, v := range c.Header {
			req.Header.Set(k, v)
		}
	})
}
