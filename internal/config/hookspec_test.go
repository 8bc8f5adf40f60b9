package config

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"
)

// The hook specs' fuzz targets: no input panics, and whatever parses is usable as it is. Seeds
// live in testdata/fuzz/<target>/.

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

func TestParseCommand(t *testing.T) {
	t.Parallel()
	good := map[string][]string{
		`["/bin/deregister","--id","x"]`:    {"/bin/deregister", "--id", "x"},
		` ["sh", "-c", "echo 'a b' > /x"] `: {"sh", "-c", "echo 'a b' > /x"},
		`/bin/deregister --id x`:            {"/bin/deregister", "--id", "x"},
		"  deregister\t--id   x \n":         {"deregister", "--id", "x"},
		`curl -fsS -X PUT http://a/b?c=d`:   {"curl", "-fsS", "-X", "PUT", "http://a/b?c=d"},
	}
	for spec, want := range good {
		got, err := ParseCommand(spec)
		if err != nil {
			t.Errorf("ParseCommand(%q): %v", spec, err)
			continue
		}
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
			t.Errorf("ParseCommand(%q) = %q, want %q", spec, got, want)
		}
	}
	bad := map[string]string{
		"":                       "empty command",
		"   ":                    "empty command",
		"[]":                     "empty command",
		`[""]`:                   "empty command",
		`["/bin/x"`:              "not a JSON array",
		`[1, 2]`:                 "not a JSON array",
		`["/bin/x"] --more`:      "not a JSON array",
		`sh -c 'echo hi'`:        "JSON array",
		`say "hi"`:               "JSON array",
		`a\ b`:                   "JSON array",
		"[\"a\\u0000b\"]":        "NUL",
		`{"argv":["/bin/true"]}`: "JSON array", // words, but with quotes
		`["rm","-rf",null]`:      "element 2 is null",
		`[null]`:                 "element 0 is null",
	}
	wantRefused(t, "ParseCommand", ParseCommand, bad)
}

func TestParseCall(t *testing.T) {
	t.Parallel()
	type want struct{ method, url string }
	good := map[string]want{
		"http://127.0.0.1:8500/v1/x":                        {"GET", "http://127.0.0.1:8500/v1/x"},
		"  put   http://consul:8500/x?y=z  ":                {"PUT", "http://consul:8500/x?y=z"},
		`{"url":"http://a/b"}`:                              {"GET", "http://a/b"},
		`{"method":"POST","url":"http://a","body":"{}"}`:    {"POST", "http://a"},
		`{"url":"http://a","headers":{"X-Token":"s e"}}`:    {"GET", "http://a"},
		`{"method":"PURGE","url":"HTTP://a/","headers":{}}`: {"PURGE", "http://a/"},
	}
	for spec, w := range good {
		c, err := ParseCall(spec)
		if err != nil {
			t.Errorf("ParseCall(%q): %v", spec, err)
			continue
		}
		if c.Method != w.method || c.URL.String() != w.url {
			t.Errorf("ParseCall(%q) = %s %s, want %s %s", spec, c.Method, c.URL, w.method, w.url)
		}
	}
	bad := map[string]string{
		"":                                "want URL",
		"GET":                             "use http://",
		"ftp://a/b":                       "use http://",
		"/just/a/path":                    "use http://",
		"https://consul:8501/x":           "use http://",
		"http://user:pw@a/":               "Authorization header",
		"http:///nohost":                  "no host",
		"GET http://a extra":              "want URL",
		"G(T http://a":                    "bad method",
		`{"url":"http://a","verb":"PUT"}`: "unknown field",
		`{"method":"PUT"}`:                "no URL",
		`{"url":"http://a","headers":{"A B":"c"}}`:          "bad header name",
		`{"url":"http://a","headers":{"A":"c\r\nEvil: 1"}}`: "control character",
		`{"url":"http://a","headers":{"X-Token":null}}`:     `header "X-Token" is null`,
		`{"url":"http://a"} {}`:                             "text after",
		"http://a b":                                        "bad method",
		"http://a:0/":                                       "bad port",
		"http://a:65536/":                                   "bad port",
		"POST http://a:99999999999999999999/":               "bad port",
	}
	wantRefused(t, "ParseCall", ParseCall, bad)
}

func TestParseProbe(t *testing.T) {
	t.Parallel()
	good := map[string]string{
		"tcp://127.0.0.1:8080":      "tcp://127.0.0.1:8080",
		" TCP://[::1]:80 ":          "tcp://[::1]:80",
		"tcp://:8080":               "tcp://:8080",
		"tcp://app:9000":            "tcp://app:9000",
		"http://127.0.0.1:8080/rdy": "http://127.0.0.1:8080/rdy",
		"http://app/healthz?x=1":    "http://app/healthz?x=1",
		"http://app:65535/":         "http://app:65535/",
	}
	for spec, want := range good {
		p, err := ParseProbe(spec)
		if err != nil || p.String() != want {
			t.Errorf("ParseProbe(%q) = %v, %v; want %s", spec, p, err, want)
		}
	}
	for _, spec := range []string{"", "127.0.0.1:8080", "tcp://", "tcp://host", "tcp://host:0", "tcp://host:65536",
		"tcp://host:http", "tcp://host:+80", "tcp://host:80/path",
		"http://app:0/", "http://app:65536/", "http://[::1]:99999/", "tcp://a@b:80", "udp://a:1", "ftp://a/", "http://", "https://app/",
		"tcp://app\r\n:8080", "tcp://a\x00b:80", "tcp://h%zz:80"} {
		if p, err := ParseProbe(spec); err == nil {
			t.Errorf("ParseProbe(%q) = %v, want an error", spec, p)
		}
	}
	// User info is refused without quoting the password, wherever it would break the parse.
	for _, spec := range []string{"tcp://u:s3cret@h/", "tcp://u:s3cret@h:80", "tcp://h:80@s3cret"} {
		if _, err := ParseProbe(spec); err == nil || strings.Contains(err.Error(), "cret") {
			t.Errorf("ParseProbe(%q): %v, want an error without the password", spec, err)
		}
	}
}

// wantRefused checks that parse refuses each spec of bad with an error that holds its text.
func wantRefused[T any](t *testing.T, name string, parse func(string) (T, error), bad map[string]string) {
	t.Helper()
	for spec, want := range bad {
		if _, err := parse(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s(%q) = %v, want an error with %q", name, spec, err, want)
		}
	}
}
