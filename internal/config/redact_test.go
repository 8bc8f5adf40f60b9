package config

import (
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8500/v1/agent/service/deregister/web": "http://127.0.0.1:8500/v1/agent/service/deregister/web",
		"PUT http://u:pw0rd@h:1/x":                              "PUT http://xxxxx@h:1/x",
		"http://u:p w@h/":                                       "http://xxxxx@h/",
		"a:b@c http://u:pw0rd@h":                                "a:xxxxx@h",
		"pw0rd@h":                                               "xxxxx@h",
		"htp:/u:pw0rd@h":                                        "htp:xxxxx@h",
		"u:pw0rd@h":                                             "u:xxxxx@h",
		"http://h/http://u:pw0rd@h2/":                           "http://xxxxx@h2/",
		"tcp://:8080":                                           "tcp://:8080",
		`{"method":"PUT","url":"http://127.0.0.1:8500/x","headers":{"X-Consul-Token":"t0ken"},"body":"{\"k\":\"s3cret\"}"}`: `{"method":"PUT","url":"http://127.0.0.1:8500/x","headers":{"X-Consul-Token":"xxxxx"},"body":"xxxxx"}`,
		`{"url":"http://u:pw0rd@h/"}`:                                                         `{"url":"http://xxxxx@h/"}`,
		`{"url":"http://h/","headers":{"Authorization":"Bearer t0ken"},}`:                     `{…63 bytes, not shown}`,
		`{"url":"http://h/","headers":{"Authorization":"Bearer t0ken"},"hdrs":{"A":"t0ken"}}`: `{"url":"http://h/","headers":{"Authorization":"xxxxx"}}`,
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%s) = %s, want %s", in, got, want)
		}
	}
}

// FuzzRedact: whatever surrounds it, a password or a header value does not get through.
func FuzzRedact(f *testing.F) {
	const secret = "S3CR3TXYZ"
	f.Fuzz(func(t *testing.T, junk string) {
		if strings.Contains(junk, secret) || strings.Contains(junk, `\`) {
			return // the secret written out, or escaped in JSON, in the junk itself
		}
		for _, spec := range []string{
			"http://u:" + secret + "@h" + junk,
			junk + "http://u:" + secret + "@h",
			"POST " + junk + "://u:" + secret + "@h/",
			`{"url":"http://h/","headers":{"Authorization":"Bearer ` + secret + `"}` + junk,
			`{"url":"http://u:` + secret + `@h/"` + junk,
			`{"url":"http://h/","headers":{"Authorization: Bearer ` + secret + `":""}` + junk,
			`{"method":"http://u:` + secret + `","url":"http://h/"` + junk,
		} {
			if got := Redact(spec); strings.Contains(got, secret) {
				t.Fatalf("Redact(%q) = %q", spec, got)
			}
		}
	})
}
