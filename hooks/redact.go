package hooks

import (
	"encoding/json"
	"fmt"
	"strings"
)

// masked stands for a value not shown, as url.URL.Redacted writes a password.
const masked = "xxxxx"

// Redact is an HTTP hook's or a ready probe's spec as an error or the log may show it: a URL's
// user info masked; a JSON hook's header values and body masked (a deregistration call carries
// its token in a header); a JSON hook that does not parse not shown at all, as where its
// secrets are cannot be told. Those messages reach the container's log, the pod's events and
// `drainit check`'s reports, which more people may read than the Secret a value came from.
func Redact(spec string) string {
	s := strings.TrimSpace(spec)
	if !strings.HasPrefix(s, "{") {
		return redact(s)
	}
	var js httpSpec
	if err := json.Unmarshal([]byte(s), &js); err != nil {
		return fmt.Sprintf("{…%d bytes, not shown}", len(s))
	}
	js.Method, js.URL = clip(js.Method), redact(js.URL)
	headers := map[string]string{}
	for k := range js.Headers {
		headers[clip(k)] = masked // a name that is a whole "Name: value" header too
	}
	if js.Body != "" {
		js.Body = masked
	}
	b, err := json.Marshal(struct {
		Method  string            `json:"method,omitempty"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers,omitempty"`
		Body    string            `json:"body,omitempty"`
	}{js.Method, js.URL, headers, js.Body})
	if err != nil {
		return fmt.Sprintf("{…%d bytes, not shown}", len(s))
	}
	return string(b)
}

// redact hides the user info of a URL: everything from the first ":" to the last "@", but a
// "//" right after that ":". Not url.URL.Redacted: the URL may not parse, or parse otherwise than
// the user meant ("htp:/u:pw@h" has no user info for url.Parse, "http://h/http://u:pw@h" none
// but its own, "http://u:p w@h" is two fields), and an error shows what the user wrote.
func redact(s string) string {
	at := strings.LastIndex(s, "@")
	if at < 0 {
		return s
	}
	keep := strings.Index(s[:at], ":") + 1 // 0 without one: all of it
	if keep > 0 && strings.HasPrefix(s[keep:at], "//") {
		keep += 2
	}
	return s[:keep] + masked + s[at:]
}

// clip is a method or a header name that is not one, as an error shows it: cut at the first
// ":", "/", "@" or white space, for what is there may be a URL or a whole "Name: value" header.
func clip(s string) string {
	if i := strings.IndexAny(s, ":/@ \t"); i >= 0 {
		return s[:i] + "…"
	}
	return s
}
