// Package http1 is the small part of HTTP/1.1 drainit speaks: its control server (/prestop,
// /healthz, …), its HTTP hooks and its ready probe. One request per connection, plain TCP, every
// read bounded in time and size.
//
// Why not net/http: it brings TLS, HTTP/2, x509 and the FIPS crypto module with it, about 3 MB
// of a binary that is copied into every container image and runs as PID 1, while drainit only
// ever talks plain HTTP to the kubelet, to loopback and to the pod network. A TLS endpoint can
// still be reached from an exec hook (curl).
package http1

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/textproto"
	"strconv"
	"strings"

	"github.com/drainit/drainit/internal/config"
)

// Limits on what is read from a peer.
const (
	// MaxHeaderBytes bounds a request's or a response's head (start line and header fields).
	MaxHeaderBytes = config.MaxHeaderBytes
	// MaxBodyBytes bounds the body drainit reads; a longer one is refused (server) or cut
	// (client).
	MaxBodyBytes = 64 << 10
)

// Errors a peer's malformed message maps to.
var (
	ErrHeaderTooLarge = errors.New("header fields too large")
	ErrMalformed      = errors.New("malformed HTTP message")
)

// Request is a parsed request head.
type Request struct {
	Method     string
	Path       string // the path of the request target, as sent (not unescaped); query left out
	Query      string
	Header     textproto.MIMEHeader // canonical keys
	RemoteAddr string
	body       int64    // Content-Length
	peer       net.Conn // the server's connection the request came on; nil when unknown
}

// Connected says whether the client still holds the connection the request came on, waiting for
// the answer: false once it has closed it (or reset it), true when that is unknown (a request not
// read from a socket). It reads nothing and never waits. A client that shuts down its sending
// side after its request, and still reads, looks gone too.
func (r *Request) Connected() bool {
	if r.peer == nil {
		return true
	}
	return peerOpen(r.peer)
}

// head reads a message head: the start line and the header fields up to the empty line, at most
// MaxHeaderBytes in all. When the fields pass that, the start line read is returned beside
// ErrHeaderTooLarge: a response's status is known all the same.
func head(r *bufio.Reader) (start string, h textproto.MIMEHeader, err error) {
	budget := MaxHeaderBytes
	readLine := func() (string, error) {
		var line []byte
		for {
			frag, err := r.ReadSlice('\n')
			budget -= len(frag)
			if budget < 0 {
				return "", ErrHeaderTooLarge
			}
			line = append(line, frag...)
			if err == nil {
				break
			}
			if !errors.Is(err, bufio.ErrBufferFull) {
				if errors.Is(err, io.EOF) && len(line) > 0 {
					return "", fmt.Errorf("%w: truncated", ErrMalformed)
				}
				return "", err
			}
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		return string(line), nil
	}
	if start, err = readLine(); err != nil {
		return "", nil, err
	}
	h = textproto.MIMEHeader{}
	for {
		line, err := readLine()
		if errors.Is(err, ErrHeaderTooLarge) {
			return start, nil, err
		}
		if err != nil {
			return "", nil, err
		}
		if line == "" {
			return start, h, nil
		}
		if line[0] == ' ' || line[0] == '\t' {
			return "", nil, fmt.Errorf("%w: folded header line", ErrMalformed)
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || !config.IsToken(name) {
			return "", nil, fmt.Errorf("%w: bad header line", ErrMalformed)
		}
		if strings.ContainsAny(value, "\x00\r\n") {
			return "", nil, fmt.Errorf("%w: control character in header value", ErrMalformed)
		}
		key := textproto.CanonicalMIMEHeaderKey(name)
		h[key] = append(h[key], strings.Trim(value, " \t"))
	}
}

// contentLength reads the Content-Length of a message: -1 when absent. Conflicting or malformed
// values are an error, as request smuggling hides in them.
func contentLength(h textproto.MIMEHeader) (int64, error) {
	vs := h["Content-Length"]
	if len(vs) == 0 {
		return -1, nil
	}
	// 1*DIGIT (RFC 9110, section 8.6): strconv alone takes "+5" and "-0", which a proxy in
	// front may read otherwise.
	n, err := strconv.ParseInt(vs[0], 10, 64)
	if err != nil || n < 0 || strings.TrimLeft(vs[0], "0123456789") != "" {
		return 0, fmt.Errorf("%w: bad Content-Length", ErrMalformed)
	}
	for _, v := range vs[1:] {
		if v != vs[0] {
			return 0, fmt.Errorf("%w: conflicting Content-Length", ErrMalformed)
		}
	}
	return n, nil
}

// parseRequest reads a request head.
func parseRequest(r *bufio.Reader) (*Request, error) {
	start, h, err := head(r)
	if err != nil {
		return nil, err
	}
	method, rest, ok1 := strings.Cut(start, " ")
	target, proto, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || !config.IsToken(method) || (proto != "HTTP/1.1" && proto != "HTTP/1.0") {
		return nil, fmt.Errorf("%w: bad request line", ErrMalformed)
	}
	if !strings.HasPrefix(target, "/") {
		// Absolute form (a proxy's request) is legal but drainit is no proxy's origin: take the
		// path and query of it. The authority ends at the first "/" or "?" (RFC 3986):
		// "http://x?/status" asks for "/" with the query "/status", not for /status.
		scheme, rest, ok := strings.Cut(target, "://")
		if !ok || !strings.EqualFold(scheme, "http") && !strings.EqualFold(scheme, "https") || strings.Contains(rest, "#") {
			return nil, fmt.Errorf("%w: bad request target", ErrMalformed)
		}
		switch i := strings.IndexAny(rest, "/?"); {
		case i < 0:
			target = "/"
		case rest[i] == '?':
			target = "/" + rest[i:]
		default:
			target = rest[i:]
		}
	}
	if strings.ContainsAny(target, " \x00") {
		return nil, fmt.Errorf("%w: bad request target", ErrMalformed)
	}
	if len(h["Transfer-Encoding"]) > 0 {
		return nil, errChunked
	}
	n, err := contentLength(h)
	if err != nil {
		return nil, err
	}
	path, query, _ := strings.Cut(target, "?")
	return &Request{Method: method, Path: path, Query: query, Header: h, body: max(n, 0)}, nil
}

var errChunked = errors.New("chunked request bodies are not supported")

// reasons are the reason phrases of the codes drainit uses.
var reasons = map[int]string{
	200: "OK",
	400: "Bad Request",
	401: "Unauthorized",
	404: "Not Found",
	405: "Method Not Allowed",
	408: "Request Timeout",
	413: "Content Too Large",
	431: "Request Header Fields Too Large",
	500: "Internal Server Error",
	501: "Not Implemented",
	503: "Service Unavailable",
}

// StatusText is the reason phrase for the codes drainit uses.
func StatusText(code int) string {
	if t, ok := reasons[code]; ok {
		return t
	}
	return "Status " + strconv.Itoa(code)
}
