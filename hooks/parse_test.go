package hooks

import (
	"strings"
	"testing"
)

func TestParseExec(t *testing.T) {
	t.Parallel()
	good := map[string][]string{
		`["/bin/deregister","--id","x"]`:    {"/bin/deregister", "--id", "x"},
		` ["sh", "-c", "echo 'a b' > /x"] `: {"sh", "-c", "echo 'a b' > /x"},
		`/bin/deregister --id x`:            {"/bin/deregister", "--id", "x"},
		"  deregister\t--id   x \n":         {"deregister", "--id", "x"},
		`curl -fsS -X PUT http://a/b?c=d`:   {"curl", "-fsS", "-X", "PUT", "http://a/b?c=d"},
	}
	for spec, want := range good {
		h, err := ParseExec("offline-exec", spec, nil)
		if err != nil {
			t.Errorf("ParseExec(%q): %v", spec, err)
			continue
		}
		if got := h.(*execHook).argv; strings.Join(got, "\x00") != strings.Join(want, "\x00") {
			t.Errorf("ParseExec(%q) argv = %q, want %q", spec, got, want)
		}
		if h.Name() != "offline-exec" {
			t.Errorf("Name() = %q", h.Name())
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
	for spec, want := range bad {
		_, err := ParseExec("offline-exec", spec, nil)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `"offline-exec"`) {
			t.Errorf("ParseExec(%q) = %v, want an error with the hook's name and %q", spec, err, want)
		}
	}
}

func TestParseHTTP(t *testing.T) {
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
		h, err := ParseHTTP("offline-http", spec)
		if err != nil {
			t.Errorf("ParseHTTP(%q): %v", spec, err)
			continue
		}
		hh := h.(*httpHook)
		if hh.method != w.method || hh.url.String() != w.url {
			t.Errorf("ParseHTTP(%q) = %s %s, want %s %s", spec, hh.method, hh.url, w.method, w.url)
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
	for spec, want := range bad {
		_, err := ParseHTTP("offline-http", spec)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `"offline-http"`) {
			t.Errorf("ParseHTTP(%q) = %v, want an error with the hook's name and %q", spec, err, want)
		}
	}
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
