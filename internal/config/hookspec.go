package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
)

// The hooks' and the ready probe's values: read here, so that drainit refuses a mistake at start
// with the other options and drainit check finds it too; package hooks runs what they say.

// Hook is a hook option's value: as given (Spec, for messages), and as read, an exec hook's
// command (Argv) or an HTTP hook's request (Call).
type Hook struct {
	Spec string
	Argv []string
	Call Call
}

// ParseCommand reads an exec hook's command, given either as a JSON array of strings
// (["/bin/deregister","--id","x"]) or as words separated by white space (/bin/deregister --id x).
// The plain form is not a shell: quotes and backslashes are refused rather than taken literally
// (use the JSON form, or ["sh","-c","…"]).
func ParseCommand(spec string) ([]string, error) {
	s := strings.TrimSpace(spec)
	var argv []string
	if strings.HasPrefix(s, "[") {
		// Through pointers: encoding/json reads a null as an empty string, and
		// ["rm","-rf",null] would run `rm -rf ""`.
		var words []*string
		if err := json.Unmarshal([]byte(s), &words); err != nil {
			return nil, fmt.Errorf("command %q is not a JSON array of strings: %w", spec, err)
		}
		for i, w := range words {
			if w == nil {
				return nil, fmt.Errorf("command %q is not a JSON array of strings: element %d is null", spec, i)
			}
			argv = append(argv, *w)
		}
	} else {
		if strings.ContainsAny(s, `'"\`) {
			return nil, fmt.Errorf("command %q: quotes and backslashes are not interpreted (no shell here); give the command as a JSON array", spec)
		}
		argv = strings.Fields(s)
	}
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("empty command")
	}
	for _, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, fmt.Errorf("command %q: NUL byte in an argument", spec)
		}
	}
	return argv, nil
}

// httpSpec is the JSON form of an HTTP hook.
type httpSpec struct {
	Method  string             `json:"method"`
	URL     string             `json:"url"`
	Headers map[string]*string `json:"headers"` // through pointers, to tell a null from ""
	Body    string             `json:"body"`
}

// Call is an HTTP hook's request, as ParseCall reads it.
type Call struct {
	Method string // upper-cased; GET by default
	URL    *url.URL
	Header map[string]string // a "Host" header sets the request's Host; nil: none
	Body   string
}

// ParseCall reads an HTTP hook: a URL (a GET), "METHOD URL", or a JSON object
// {"method":"PUT","url":"http://…","headers":{"X-A":"b"},"body":"…"} in which only url is
// required (method defaults to GET). The method is upper-cased. No Content-Type is added to a
// body. The URL is an absolute http:// one (CheckURL).
func ParseCall(spec string) (Call, error) {
	s := strings.TrimSpace(spec)
	var js httpSpec
	if strings.HasPrefix(s, "{") {
		dec := json.NewDecoder(strings.NewReader(s))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&js); err != nil {
			// The value is not shown (Redact): the offset says where to look.
			if se := (*json.SyntaxError)(nil); errors.As(err, &se) {
				return Call{}, fmt.Errorf("not a valid JSON hook (method, url, headers, body): %w, at byte %d", err, se.Offset)
			}
			return Call{}, fmt.Errorf("not a valid JSON hook (method, url, headers, body): %w", err)
		}
		if _, err := dec.Token(); err != io.EOF {
			return Call{}, errors.New("text after the JSON object")
		}
	} else {
		switch f := strings.Fields(s); len(f) {
		case 1:
			js.URL = f[0]
		case 2:
			js.Method, js.URL = f[0], f[1]
		default:
			return Call{}, errors.New("want URL, METHOD URL, or a JSON object")
		}
	}
	h := Call{Method: strings.ToUpper(js.Method), Body: js.Body}
	for k, v := range js.Headers {
		if v == nil {
			return Call{}, fmt.Errorf("header %q is null: give it a string", clipName(k))
		}
		if h.Header == nil {
			h.Header = map[string]string{}
		}
		h.Header[k] = *v
	}
	if h.Method == "" {
		h.Method = "GET"
	}
	if !IsToken(h.Method) {
		return Call{}, fmt.Errorf("bad method %q", clipName(js.Method))
	}
	u, err := parseHTTPURL(js.URL)
	if err != nil {
		return Call{}, err
	}
	h.URL = u
	for k, v := range h.Header {
		if !IsToken(k) {
			return Call{}, fmt.Errorf("bad header name %q", clipName(k))
		}
		if strings.ContainsFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
			return Call{}, fmt.Errorf("control character in the value of header %q", k)
		}
	}
	return h, nil
}

// parseHTTPURL accepts an absolute http URL with a host.
func parseHTTPURL(s string) (*url.URL, error) {
	if s == "" {
		return nil, errors.New("no URL")
	}
	u, err := CheckURL(s)
	if err != nil {
		return nil, fmt.Errorf("URL %q: %w", redact(s), err)
	}
	return u, nil
}

// Probe is a ready probe as --ready-probe gives it: a TCP connection to TCP, or a GET of URL.
type Probe struct {
	TCP string   // tcp://HOST:PORT's HOST:PORT; "" for an http:// probe
	URL *url.URL // an http:// probe's URL; nil for a tcp:// one
}

// Addr is the HOST:PORT the probe connects to (an http:// URL's port 80 made explicit).
func (p Probe) Addr() string {
	if p.URL != nil {
		return Addr(p.URL)
	}
	return p.TCP
}

// String is the probe as the log shows it: tcp://HOST:PORT, or the URL with its password masked.
func (p Probe) String() string {
	if p.URL != nil {
		return p.URL.Redacted()
	}
	return "tcp://" + p.TCP
}

// ParseProbe reads a ready probe: tcp://HOST:PORT (ready once a TCP connection is accepted; an
// empty HOST is the local system) or an http:// URL (ready on a 2xx answer to a GET). Probes
// never use a proxy: they check the app next to drainit.
func ParseProbe(spec string) (Probe, error) {
	s := strings.TrimSpace(spec)
	if len(s) >= 6 && strings.EqualFold(s[:6], "tcp://") {
		rest := s[6:]
		if strings.Contains(rest, "@") {
			// User info has no meaning here, and the errors below would quote its password.
			return Probe{}, errors.New("ready probe: a tcp:// probe takes HOST:PORT, no user info (\"@\")")
		}
		host, port, err := net.SplitHostPort(rest)
		if ae := (*net.AddrError)(nil); errors.As(err, &ae) {
			return Probe{}, fmt.Errorf("ready probe: want tcp://HOST:PORT: %s", ae.Err) // not the address again
		} else if err != nil {
			return Probe{}, fmt.Errorf("ready probe: want tcp://HOST:PORT: %w", err)
		}
		if _, err := ParsePort(port); err != nil {
			return Probe{}, fmt.Errorf("ready probe: %w", err)
		}
		if strings.ContainsAny(host, "/?#@ ") {
			return Probe{}, errors.New("ready probe: bad host (it holds \"/\", \"?\", \"#\", \"@\" or a space)")
		}
		// No name or address holds them, and a dial would fail the same way for ever.
		if strings.ContainsFunc(host, func(r rune) bool { return r < ' ' || r == 0x7f }) ||
			strings.Contains(host, "%") && !strings.Contains(host, ":") {
			return Probe{}, errors.New("ready probe: bad host (a control character, or a zone (%) outside an IPv6 address)")
		}
		return Probe{TCP: net.JoinHostPort(host, port)}, nil
	}
	if strings.Contains(s, "://") {
		u, err := parseHTTPURL(s)
		if err != nil {
			return Probe{}, fmt.Errorf("ready probe: %w", err)
		}
		return Probe{URL: u}, nil
	}
	return Probe{}, errors.New("ready probe: want tcp://HOST:PORT or an http:// URL")
}

// Masked stands for a value not shown, as url.URL.Redacted writes a password.
const Masked = "xxxxx"

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
	js.Method, js.URL = clipName(js.Method), redact(js.URL)
	headers := map[string]string{}
	for k := range js.Headers {
		headers[clipName(k)] = Masked // a name that is a whole "Name: value" header too
	}
	if js.Body != "" {
		js.Body = Masked
	}
	// Strings only (invalid UTF-8 is replaced, not refused): it cannot fail.
	b, _ := json.Marshal(struct {
		Method  string            `json:"method,omitempty"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers,omitempty"`
		Body    string            `json:"body,omitempty"`
	}{js.Method, js.URL, headers, js.Body})
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
	return s[:keep] + Masked + s[at:]
}

// clipName is a method or a header name that is not one, as an error shows it: cut at the first
// ":", "/", "@" or white space, for what is there may be a URL or a whole "Name: value" header.
func clipName(s string) string {
	if i := strings.IndexAny(s, ":/@ \t"); i >= 0 {
		return s[:i] + "…"
	}
	return s
}
