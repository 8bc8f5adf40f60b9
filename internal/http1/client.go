package http1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drainit/drainit/internal/config"
)

// Call is one client request.
type Call struct {
	Method string
	URL    string // http:// only
	Header map[string]string
	Body   []byte
	// SuccessHeadOnly makes Do return as soon as the head of a 2xx answer has come, without
	// reading its body: for callers that only ask whether the call succeeded (hooks, the ready
	// probe). A server that answers 2xx and then keeps its body coming (a stream, a length it
	// never fills, no length on a connection it keeps open) would otherwise hold them until their
	// deadline for a result already known. Other answers' bodies are still read, for the error.
	SuccessHeadOnly bool
}

// Result is the answer to a Call: the status and at most MaxBodyBytes of the body (none for a
// 2xx answer to a SuccessHeadOnly call).
type Result struct {
	Status int
	Body   []byte
	// FieldsTooLarge says the answer's header fields passed MaxHeaderBytes: its status stands
	// (a service behind a gateway that adds cookies and policies can send that much), and its
	// body was not read, for its framing was in fields left unread.
	FieldsTooLarge bool
}

// Do sends c and reads the answer, all within ctx (which should carry a deadline). It never
// goes through a proxy: drainit's calls are to loopback and the pod network, and a container's
// HTTP_PROXY is for the app's traffic. Redirects are not followed.
func Do(ctx context.Context, c Call) (Result, error) {
	u, err := config.CheckURL(c.URL)
	if err != nil {
		return Result{}, err
	}
	conn, err := Dial(ctx, config.Addr(u))
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
	if i, j := strings.IndexByte(hostHeader, '%'), strings.IndexByte(hostHeader, ']'); strings.HasPrefix(hostHeader, "[") && i > 0 && j > i {
		// An IPv6 zone is the client's own business (RFC 6874): not sent in Host, port or not.
		hostHeader = hostHeader[:i] + hostHeader[j:]
	}
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
		case strings.EqualFold(k, "Content-Length"), strings.EqualFold(k, "Connection"), strings.EqualFold(k, "Transfer-Encoding"):
			continue // the framing is Do's: with Content-Length, a Transfer-Encoding would make it ambiguous
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
	res, err := readResponse(bufio.NewReaderSize(conn, 4096), method, c.SuccessHeadOnly)
	if err != nil {
		return Result{}, ctxErr(ctx, fmt.Errorf("reading the answer: %w", err))
	}
	return res, nil
}

// maxInterim bounds the interim (1xx) responses skipped before the final one: a server that
// sends nothing else must not keep drainit reading until its deadline.
const maxInterim = 5

// maxQuoted bounds the part of a malformed status line an error quotes.
const maxQuoted = 200

// readResponse reads the answer to a request made with method from r: the head of the final
// response (interim 1xx ones skipped) and at most MaxBodyBytes of its body (none of a 2xx answer
// with successHeadOnly, see Call). Whatever the server sends, it reads at most
// (maxInterim+1)·MaxHeaderBytes of heads and, of a body, MaxBodyBytes and the bounded framing
// around them (see readChunked), and holds no more than that. A malformed status line is quoted
// up to maxQuoted bytes. A final answer whose header fields pass MaxHeaderBytes is its status
// alone (FieldsTooLarge).
func readResponse(r *bufio.Reader, method string, successHeadOnly bool) (Result, error) {
	for range maxInterim + 1 {
		status, h, err := head(r)
		tooLarge := errors.Is(err, ErrHeaderTooLarge) && status != ""
		if err != nil && !tooLarge {
			return Result{}, err
		}
		code, ok := parseStatusLine(status)
		if !ok {
			if len(status) > maxQuoted {
				// The log gets one bounded line, not 8 KiB escaped; and not the start of the word
				// the cut falls in, which may be a secret the server echoed (a caller masks
				// whole ones).
				status = status[:maxQuoted]
				if i := strings.LastIndexByte(status, ' '); i > 0 {
					status = status[:i+1]
				} else {
					status = ""
				}
				status += "…"
			}
			return Result{}, fmt.Errorf("%w: bad status line %q", ErrMalformed, status)
		}
		// RFC 9110 15.2: a client parses any 1xx before the final answer, even unasked for (103
		// Early Hints). 101 is final: drainit never asks to switch, and what follows is no HTTP.
		if code < 200 && code != 101 {
			if tooLarge {
				return Result{}, err // where the next answer begins is unknown
			}
			continue
		}
		if tooLarge {
			return Result{Status: code, FieldsTooLarge: true}, nil
		}
		res := Result{Status: code}
		if method == "HEAD" || code == 101 || code == 204 || code == 304 {
			return res, nil // no body, whatever the fields say (RFC 9112 6.3)
		}
		if successHeadOnly && code >= 200 && code <= 299 {
			return res, nil // the caller has its answer; the connection is closed unread
		}
		// The status is what matters: a body cut short after it is no failure of the call.
		var body io.Reader = r
		if te := h["Transfer-Encoding"]; len(te) > 0 {
			// Transfer-Encoding overrides Content-Length; chunked, if used, is the last coding.
			// Other codings are kept as they came: drainit only shows the body.
			codings := strings.Split(te[len(te)-1], ",")
			if strings.EqualFold(strings.TrimSpace(codings[len(codings)-1]), "chunked") {
				res.Body = readChunked(r)
				return res, nil
			}
		} else if n, err := contentLength(h); err == nil && n >= 0 {
			body = io.LimitReader(r, n)
		}
		res.Body, _ = io.ReadAll(io.LimitReader(body, MaxBodyBytes))
		return res, nil
	}
	return Result{}, fmt.Errorf("%w: more than %d interim (1xx) responses", ErrMalformed, maxInterim)
}

// parseStatusLine reads "HTTP/1.x SP 3DIGIT [SP reason]" (RFC 9112 4); a missing reason and its
// space are tolerated, as servers omit them.
func parseStatusLine(line string) (int, bool) {
	proto, rest, _ := strings.Cut(line, " ")
	codeText, _, _ := strings.Cut(rest, " ")
	if len(proto) != len("HTTP/1.1") || !strings.HasPrefix(proto, "HTTP/1.") || !isDigits(proto[7:]) ||
		len(codeText) != 3 || !isDigits(codeText) || codeText[0] == '0' {
		return 0, false
	}
	code, err := strconv.Atoi(codeText)
	return code, err == nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// maxChunkOverhead bounds the framing of a chunked body beyond 16 bytes a chunk plus twice its
// data (what net/http allows): chunk extensions are not a way to make drainit read forever.
const maxChunkOverhead = 16 << 10

// readChunked decodes a chunked body (RFC 9112 7.1), keeping at most MaxBodyBytes. It stops at
// the last chunk (trailer fields are not read: the connection is closed after the call), at the
// limit, or at the first malformed part, keeping what came before.
func readChunked(r *bufio.Reader) []byte {
	body := []byte{}
	excess := 0
	for len(body) < MaxBodyBytes {
		line, err := r.ReadSlice('\n') // longer than the reader's buffer: ErrBufferFull, stop
		if err != nil {
			return body
		}
		size, ok := chunkSize(line)
		if !ok || size == 0 {
			return body
		}
		excess += len(line) + 2 - 16 - 2*int(min(size, MaxBodyBytes))
		if excess = max(excess, 0); excess > maxChunkOverhead {
			return body
		}
		n := int(min(size, int64(MaxBodyBytes-len(body))))
		start := len(body)
		body = slices.Grow(body, n)[:start+n]
		got, err := io.ReadFull(r, body[start:])
		body = body[:start+got]
		if err != nil || int64(n) < size {
			return body
		}
		if crlf, err := r.ReadSlice('\n'); err != nil || (string(crlf) != "\r\n" && string(crlf) != "\n") {
			return body
		}
	}
	return body
}

// chunkSize reads a chunk-size line: hex digits, then optional whitespace and extensions, then
// the line end.
func chunkSize(line []byte) (int64, bool) {
	s := strings.TrimSuffix(strings.TrimSuffix(string(line), "\n"), "\r")
	s, _, _ = strings.Cut(s, ";")
	s = strings.TrimRight(s, " \t")
	if s == "" || len(s) > 16 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i] | 0x20; !('0' <= s[i] && s[i] <= '9') && !('a' <= c && c <= 'f') {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 16, 64)
	return n, err == nil
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
