package hooks

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"
)

// The fuzz targets check that no input panics and that whatever parses is usable as it is.
// Seeds live in testdata/fuzz/<target>/.

func FuzzParseExec(f *testing.F) {
	f.Fuzz(func(t *testing.T, spec string) {
		h, err := ParseExec("fuzz", spec, nil)
		if err != nil {
			return
		}
		argv := h.(*execHook).argv
		if len(argv) == 0 || argv[0] == "" {
			t.Fatalf("ParseExec(%q) accepted an empty command %q", spec, argv)
		}
		for _, a := range argv {
			if strings.IndexByte(a, 0) >= 0 {
				t.Fatalf("ParseExec(%q) accepted a NUL byte: %q", spec, argv)
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
		back, err := ParseExec("fuzz", string(js), nil)
		if err != nil || strings.Join(back.(*execHook).argv, "\x00") != strings.Join(argv, "\x00") {
			t.Fatalf("ParseExec(%s) = %v, %v; want %q back", js, back, err, argv)
		}
	})
}

func FuzzParseHTTP(f *testing.F) {
	f.Fuzz(func(t *testing.T, spec string) {
		h, err := ParseHTTP("fuzz", spec)
		if err != nil {
			return
		}
		hh := h.(*httpHook)
		if hh.url.Scheme != "http" && hh.url.Scheme != "https" || hh.url.Host == "" {
			t.Fatalf("ParseHTTP(%q) accepted URL %q", spec, hh.url)
		}
		// Whatever is accepted can be sent: the request is built the way Run builds it.
		req, err := http.NewRequest(hh.method, hh.url.String(), nil)
		if err != nil {
			t.Fatalf("ParseHTTP(%q) accepted a request net/http refuses: %v", spec, err)
		}
		for k, v := range hh.headers {
			req.Header.Set(k, v)
		}
	})
}

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
