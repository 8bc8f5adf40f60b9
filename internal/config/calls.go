package config

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// The forms of HTTP that options take (hooks' calls, the ready probe, the control server's
// token), which drainit's own HTTP/1.1 (internal/http1) speaks by: here so that a value is
// refused at start, by drainit and by drainit check alike, for what would fail at each call.

// MaxHeaderBytes bounds a request's or a response's head (start line and header fields) that
// internal/http1 reads; the control server's token must fit in it (MaxTokenBytes).
const MaxHeaderBytes = 8 << 10

// CheckURL reports whether u is a URL drainit can call (internal/http1.Do): http scheme, a host,
// a port (if any) from 1 to 65535, no user info.
func CheckURL(u string) (*url.URL, error) {
	p, err := url.Parse(u)
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		return nil, ue.Err // without the URL, which the caller shows as it may (redacted)
	} else if err != nil {
		return nil, err
	}
	if p.Scheme != "http" {
		return nil, fmt.Errorf("scheme %q not supported: use http:// (reach https endpoints from an exec hook)", p.Scheme)
	}
	if p.Host == "" || p.Hostname() == "" {
		return nil, errors.New("no host in URL")
	}
	if p.User != nil {
		return nil, errors.New("user info in URLs is not supported: use an Authorization header")
	}
	// url.Parse keeps a query as written, and a space in it would end the request line early:
	// the server answers 400 (a ready probe then never passes). The path's is escaped.
	if strings.Contains(p.RawQuery, " ") {
		return nil, errors.New("a space in the URL's query: write it as %20 (or +)")
	}
	// url.Parse takes any digits as a port: 0 or 65536 would only fail at each call, and a ready
	// probe would retry it for ever.
	if port := p.Port(); port != "" {
		if _, err := ParsePort(port); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// ParsePort reads a TCP port to connect to: decimal digits, 1 to 65535.
func ParsePort(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if s == "" || strings.Trim(s, "0123456789") != "" || err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("bad port %q (want 1 to 65535)", s)
	}
	return n, nil
}

// Addr is the HOST:PORT an http:// URL connects to: its port, or 80.
func Addr(u *url.URL) string {
	return net.JoinHostPort(u.Hostname(), cmp.Or(u.Port(), "80"))
}

// IsToken reports whether s is an RFC 9110 token (method names, header names).
func IsToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// IsLocalhost reports whether host is localhost or a name under it, in any case, with or
// without the final dot: a name internal/http1.Dial takes for the loopback itself.
func IsLocalhost(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	return h == "localhost" || strings.HasSuffix(h, ".localhost")
}

// BearerToken is the token of an Authorization header of the Bearer scheme, as RFC 9110 reads
// it: the scheme's name in any case, one or more spaces after it. ok is false for another scheme
// or no token.
func BearerToken(header string) (token string, ok bool) {
	scheme, rest, found := strings.Cut(header, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimLeft(rest, " ")
	return token, token != ""
}
