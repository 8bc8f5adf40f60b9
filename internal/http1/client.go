package http1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Call is one client request.
type Call struct {
	Method string
	URL    string // http:// only
	Header map[string]string
	Body   []byte
}

// Result is the answer to a Call: the status and at most MaxBodyBytes of the body.
type Result struct {
	Status int
	Body   []byte
}

// CheckURL reports whether u is a URL Do can call: http scheme, a host, no user info.
func CheckURL(u string) (*url.URL, error) {
	p, err := url.Parse(u)
	if err != nil {
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
	return p, nil
}

// Do sends c and reads the answer, all within ctx (which should carry a deadline). It never
// goes through a proxy: drainit's calls are to loopback and the pod network, and a container's
// HTTP_PROXY is for the app's traffic. Redirects are not followed.
func Do(ctx context.Context, c Call) (Result, error) {
	u, err := CheckURL(c.URL)
	if err != nil {
		return Result{}, err
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "80")
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return Result{}, err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	// Cut the connection when ctx ends without a deadline (cancelled).
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	method := c.Method
	if method == "" {
		method = "GET"
	}
	hostHeader := u.Host
	var fields bytes.Buffer
	hasUA := false
	for k, v := range c.Header {
		if strings.ContainsAny(k+v, "\r\n") {
			return Result{}, fmt.Errorf("header %q: line break in name or value", k)
		}
		switch {
		case strings.EqualFold(k, "Host"):
			hostHeader = v // a virtual host other than the URL's
			continue
		case strings.EqualFold(k, "Content-Length"), strings.EqualFold(k, "Connection"):
			continue // set by Do
		case strings.EqualFold(k, "User-Agent"):
			hasUA = true
		}
		fmt.Fprintf(&fields, "%s: %s\r\n", k, v)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, u.RequestURI(), hostHeader)
	b.Write(fields.Bytes())
	if !hasUA {
		b.WriteString("User-Agent: drainit\r\n")
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\nConnection: close\r\n\r\n", len(c.Body))
	b.Write(c.Body)
	if _, err := conn.Write(b.Bytes()); err != nil {
		return Result{}, ctxErr(ctx, err)
	}
	br := bufio.NewReaderSize(conn, 4096)
	status, h, err := head(br)
	if err != nil {
		return Result{}, ctxErr(ctx, fmt.Errorf("reading the answer: %w", err))
	}
	proto, rest, _ := strings.Cut(status, " ")
	codeText, _, _ := strings.Cut(rest, " ")
	code, err := strconv.Atoi(codeText)
	if !strings.HasPrefix(proto, "HTTP/1.") || err != nil || code < 100 || code > 999 {
		return Result{}, fmt.Errorf("%w: bad status line %q", ErrMalformed, status)
	}
	var body io.Reader = br
	if n, err := contentLength(h); err == nil && n >= 0 {
		body = io.LimitReader(br, n)
	}
	// The status is what matters: a body cut short after it is no failure of the call. A
	// chunked body is kept as it came; drainit only shows it.
	data, _ := io.ReadAll(io.LimitReader(body, MaxBodyBytes))
	return Result{Status: code, Body: data}, nil
}

// ctxErr prefers ctx's reason over the i/o error it caused: the connection's deadline is ctx's,
// and it may fire a moment before ctx itself reports the deadline.
func ctxErr(ctx context.Context, err error) error {
	var ne net.Error
	if dl, ok := ctx.Deadline(); ok && errors.As(err, &ne) && ne.Timeout() && !time.Now().Before(dl) {
		return fmt.Errorf("%w (%v)", context.DeadlineExceeded, err)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%v)", context.Cause(ctx), err)
	}
	return err
}
