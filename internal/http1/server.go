package http1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Response is what a handler answers.
type Response struct {
	Status      int
	ContentType string
	Header      map[string]string // extra fields, e.g. Allow, WWW-Authenticate
	Body        []byte
}

// Handler answers one request. ctx ends when the server closes or HandlerTimeout has passed.
type Handler func(ctx context.Context, r *Request) Response

// Server serves one request per connection, each connection in its own goroutine, so that a
// slow client holds up nobody else.
//
// Admission is fair rather than first come, first served: a client that opens many connections
// and never finishes a request (slowloris) must not keep out one that sends its request at once,
// even from the same address. Below MaxConns every connection is admitted, and none is cut but
// by HeaderTimeout. At MaxConns the server makes room for a newcomer by resetting one connection
// that has not delivered its request and is older than ShedAfter: the oldest such connection of
// the address holding the most. While some address holds more than its share (MaxConnsPerIP,
// or an equal part of MaxConns among the addresses holding connections if less), only such
// addresses' connections are shed. When none may be, newcomers wait in the kernel's
// listen backlog, in order, until one may be or a connection ends. Nobody is refused: a refused
// client that reconnects at once makes a storm of connections in which every newcomer is
// refused, and so does shedding connections younger than a client needs to send its request.
// A request in its handler (a /prestop waiting for the drain) is never cut.
type Server struct {
	Handler Handler
	// HeaderTimeout bounds reading the request head, from the connection's accept: a client
	// that sends its headers a byte at a time is cut off at it (0: ReadTimeout).
	HeaderTimeout time.Duration
	// ReadTimeout bounds reading the whole request, head and body, from the connection's
	// accept.
	ReadTimeout time.Duration
	// HandlerTimeout bounds the handler (a /prestop answer waits up to the grace period).
	HandlerTimeout time.Duration
	// WriteTimeout bounds writing the response.
	WriteTimeout time.Duration
	// MaxConns bounds connections open at once (0: 512): each costs a goroutine, a buffer and a
	// file descriptor, 10–15 KiB in all.
	MaxConns int
	// MaxConnsPerIP is one remote IP's share of MaxConns, or an equal part of MaxConns among the
	// IPs holding connections if less: while some IP holds more, a full server sheds only such
	// IPs' connections (0: an eighth of MaxConns).
	MaxConnsPerIP int
	// ShedAfter is how long a new connection has to deliver its request before a full server
	// may shed it (0: 250 ms).
	ShedAfter time.Duration
	// QuickShedRate is how many connections a second a full server may shed before their
	// ShedAfter, of addresses beyond their share (0: none). A full server admits at most
	// MaxConns/ShedAfter newcomers a second otherwise, and a client of another address waits
	// in the listen backlog behind a flooder's thousands; each connection shed costs the
	// server ~80 µs of CPU, so the rate bounds what a flood costs it.
	QuickShedRate float64
	// AcceptError, when set, hears of each failed accept (out of file descriptors, say); Serve
	// retries after retry.
	AcceptError func(err error, retry time.Duration)
	// Shed, when set, hears of each connection shed, with its remote IP. It is called from the
	// accept loop: it must be quick.
	Shed func(ip string)

	mu     sync.Mutex
	ln     net.Listener
	conns  []*conn        // oldest first
	quick  tokenBucket    // for QuickShedRate (under mu)
	perIP  map[string]int // connections in conns, by remote IP
	room   chan struct{}  // a connection ended: the accept loop may have room again
	closed bool
	ctx    context.Context
	cancel context.CancelFunc
}

// conn is one served connection.
type conn struct {
	net.Conn
	ip       string
	accepted time.Time
	busy     bool        // its request is complete: in the handler or answered (under mu)
	shed     atomic.Bool // closed to make room: its goroutine ends without a word
}

// requestBufferSize is the read buffer of each connection: a kubelet's request is ~150 bytes,
// and a longer head is read in several pieces (up to MaxHeaderBytes). Small, as a slow client
// may hold hundreds of connections, each with its buffer.
const requestBufferSize = 1024

// ErrServerClosed is returned by Serve after Close.
var ErrServerClosed = errors.New("http1: server closed")

// Serve accepts connections on ln until Close, and then returns ErrServerClosed.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.ln = ln
	s.conns = nil
	s.perIP = map[string]int{}
	s.room = make(chan struct{}, 1)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.mu.Unlock()
	limit := s.MaxConns
	if limit <= 0 {
		limit = 512
	}
	perIP := s.MaxConnsPerIP
	if perIP <= 0 {
		perIP = max(limit/8, 1)
	}
	perIP = min(perIP, limit)
	shedAfter := s.ShedAfter
	if shedAfter <= 0 {
		shedAfter = 250 * time.Millisecond
	}
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return ErrServerClosed
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue // a deadline on the listener: no failure
			}
			// EMFILE, ENFILE, ENOBUFS, ECONNABORTED...: the listener is still open and the kernel
			// goes on queueing connections, so giving up would leave every later client (the
			// kubelet's preStop among them) connected and unanswered. Retry, backing off as
			// net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			if s.AcceptError != nil {
				s.AcceptError(err, backoff)
			}
			select {
			case <-time.After(backoff):
			case <-s.ctx.Done():
				return ErrServerClosed
			}
			continue
		}
		backoff = 0
		c := &conn{Conn: nc, ip: remoteIP(nc.RemoteAddr())}
		if err := s.admit(c, limit, perIP, shedAfter); err != nil {
			_ = nc.Close()
			return err
		}
		go func() {
			defer s.untrack(c)
			s.serveConn(c)
		}()
	}
}

// admit tracks c. When the server is full it first sheds a connection as the Server's doc says,
// or else waits, c unread and later newcomers in the listen backlog, until one may be shed or a
// connection ends. admit returns ErrServerClosed if the server closes meanwhile.
func (s *Server) admit(c *conn, limit, perIP int, shedAfter time.Duration) error {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return ErrServerClosed
		}
		now := time.Now()
		var shed *conn
		var wake time.Time
		if len(s.conns) >= limit {
			share := s.share(c, limit, perIP)
			beyond := false // some address holds more than its share
			for _, n := range s.perIP {
				beyond = beyond || n > share
			}
			// Beyond its share, an address's young connections may be shed too, within
			// QuickShedRate.
			quick, next := s.quick.take(now, s.QuickShedRate, float64(limit))
			// conns is oldest first, so the first one seen of each count wins.
			for _, o := range s.conns {
				young := now.Sub(o.accepted) < shedAfter
				switch {
				case o.busy, beyond && s.perIP[o.ip] <= share:
				case young && !(quick && s.perIP[o.ip] > share):
					if wake.IsZero() {
						wake = o.accepted.Add(shedAfter)
					}
					if s.perIP[o.ip] > share && !next.IsZero() && next.Before(wake) {
						wake = next
					}
				case shed == nil || s.perIP[o.ip] > s.perIP[shed.ip]:
					shed = o
				}
			}
			if shed != nil {
				if now.Sub(shed.accepted) < shedAfter {
					s.quick.spend()
				}
				shed.shed.Store(true)
				s.remove(shed)
			}
		}
		if len(s.conns) < limit {
			c.accepted = now // its time to send the request starts now, not in the backlog
			s.conns = append(s.conns, c)
			s.perIP[c.ip]++
			s.mu.Unlock()
			if shed != nil {
				s.reset(shed)
			}
			return nil
		}
		s.mu.Unlock()
		// Full, and nothing may be shed yet.
		var timeout <-chan time.Time
		if !wake.IsZero() {
			timeout = time.After(time.Until(wake))
		}
		select {
		case <-s.room:
		case <-timeout:
		case <-s.ctx.Done():
		}
	}
}

// share is what an address may hold of a full server before its connections are shed first,
// and young (under mu): perIP, and no more than an equal part of limit among the addresses
// holding connections, newcomer c's included. With perIP alone, a flood from many addresses,
// each within perIP, made nobody's connections sheddable before shedAfter (docs/design.md has
// the figures). The kubelet, holding a connection or two, stays within an equal part unless
// hundreds of addresses hold connections.
func (s *Server) share(c *conn, limit, perIP int) int {
	n := len(s.perIP)
	if s.perIP[c.ip] == 0 {
		n++
	}
	return min(perIP, max(limit/n, 1))
}

// remove takes c off the books (under mu).
func (s *Server) remove(c *conn) {
	for i, o := range s.conns {
		if o == c {
			s.conns = slices.Delete(s.conns, i, i+1)
			if s.perIP[c.ip]--; s.perIP[c.ip] <= 0 {
				delete(s.perIP, c.ip)
			}
			return
		}
	}
}

// reset closes a shed connection at once with a reset: nothing is owed to it, and a reset
// leaves no TIME_WAIT behind, which a client re-opening connections in a loop would otherwise
// pile up.
func (s *Server) reset(c *conn) {
	if l, ok := c.Conn.(interface{ SetLinger(int) error }); ok {
		_ = l.SetLinger(0)
	}
	_ = c.Close()
	if s.Shed != nil {
		s.Shed(c.ip)
	}
}

// remoteIP is the address connections are counted by: the IP of a TCP peer.
func remoteIP(a net.Addr) string {
	if a == nil {
		return ""
	}
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.String()
	}
	if host, _, err := net.SplitHostPort(a.String()); err == nil {
		return host
	}
	return a.String()
}

// markBusy records that c's request is complete and goes to the handler; false when c was
// shed meanwhile.
func (s *Server) markBusy(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.shed.Load() {
		return false
	}
	c.busy = true
	return true
}

func (s *Server) untrack(c *conn) {
	c.Close()
	if c.shed.Load() {
		return // already off the books
	}
	s.mu.Lock()
	s.remove(c)
	s.mu.Unlock()
	select {
	case s.room <- struct{}{}:
	default:
	}
}

// Close stops the listener and cuts every connection; handlers see their ctx end.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var err error
	if s.ln != nil {
		err = s.ln.Close()
		s.cancel()
	}
	for _, c := range s.conns {
		c.Close()
	}
	return err
}

func (s *Server) serveConn(c *conn) {
	headTimeout, readTimeout := s.HeaderTimeout, s.ReadTimeout
	if headTimeout <= 0 || headTimeout > readTimeout {
		headTimeout = readTimeout
	}
	_ = c.SetReadDeadline(notBeforeNow(c.accepted.Add(headTimeout)))
	cr := &countingReader{r: c}
	br := bufio.NewReaderSize(cr, requestBufferSize)
	req, err := parseRequest(br)
	if err != nil {
		var ne net.Error
		switch {
		case c.shed.Load():
			return // closed to make room: nobody to answer
		case errors.Is(err, io.EOF), errors.As(err, &ne) && ne.Timeout() && cr.n == 0:
			return // nothing was sent: nothing to answer
		case errors.As(err, &ne) && ne.Timeout():
			s.write(c, "", Response{Status: 408, Body: []byte("request timeout\n")})
			return // a client too slow to send its head: no lingering for it
		}
		// Refused before all of it was read: the rest is read out after the answer.
		resp := Response{Status: 400, Body: []byte("bad request\n")}
		switch {
		case errors.Is(err, ErrHeaderTooLarge):
			resp = Response{Status: 431, Body: []byte("header fields too large\n")}
		case errors.Is(err, errChunked):
			resp = Response{Status: 501, Body: []byte("chunked bodies not supported\n")}
		}
		s.write(c, "", resp)
		lingerClose(c, br)
		return
	}
	if req.body > MaxBodyBytes {
		s.write(c, req.Method, Response{Status: 413, Body: []byte("body too large\n")})
		lingerClose(c, br)
		return
	}
	// Read the body out (it is not used) so that closing the connection does not reset it
	// under the client before it has read the answer.
	if req.body > 0 {
		// A client that waits for leave to send its body (curl does for a second) gets it.
		if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
			_ = c.SetWriteDeadline(time.Now().Add(s.WriteTimeout))
			_, _ = io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n")
		}
		_ = c.SetReadDeadline(notBeforeNow(c.accepted.Add(readTimeout)))
		if _, err := io.CopyN(io.Discard, br, req.body); err != nil {
			if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
				s.write(c, req.Method, Response{Status: 408, Body: []byte("request timeout\n")})
			}
			return
		}
	}
	if !s.markBusy(c) {
		return
	}
	req.RemoteAddr, req.peer = c.RemoteAddr().String(), c.Conn
	ctx, cancel := context.WithTimeout(s.ctx, s.HandlerTimeout)
	defer cancel()
	resp := s.Handler(ctx, req)
	s.write(c, req.Method, resp)
	if br.Buffered() > 0 { // pipelined requests, which are not answered (Connection: close)
		lingerClose(c, br)
	}
}

// lateRead is how long a read may still wait once the server comes to it after its deadline.
const lateRead = 100 * time.Millisecond

// notBeforeNow is a read deadline that counts from the accept, but leaves the server a moment
// to read what is already there when it comes to it late. Go fails a read at once, without
// reading, once its deadline has passed: a server starved of CPU (a container throttled at its
// CPU limit, a node stalling it for seconds) would close unanswered the request a client sent in
// time, the kubelet's /prestop among them. A client that is slow itself gains lateRead at most.
func notBeforeNow(deadline time.Time) time.Time {
	if late := time.Now().Add(lateRead); deadline.Before(late) {
		return late
	}
	return deadline
}

// How long, and how much, lingerClose reads after the answer (net/http waits 500 ms too).
const (
	lingerTime  = 500 * time.Millisecond
	lingerBytes = 4 << 20
)

// lingerClose half-closes c and reads what the client still sends, for a moment, before the
// close: closing a socket with unread data resets the connection, and a client still sending
// (a request head or body refused as too large) may then lose the answer it has not read yet
// (RFC 9112, section 9.6).
func lingerClose(c *conn, br *bufio.Reader) {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = c.SetReadDeadline(time.Now().Add(lingerTime))
	_, _ = io.CopyN(io.Discard, br, lingerBytes)
}

// countingReader counts what was read, to tell a connection opened and left silent (closed
// without an answer) from a request cut off half-way (answered 408).
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func (s *Server) write(c net.Conn, method string, r Response) {
	_ = c.SetWriteDeadline(time.Now().Add(s.WriteTimeout))
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", r.Status, StatusText(r.Status))
	ct := r.ContentType
	if ct == "" {
		ct = "text/plain; charset=utf-8"
	}
	b.WriteString("Content-Type: " + ct + "\r\n")
	b.WriteString("Content-Length: " + strconv.Itoa(len(r.Body)) + "\r\n")
	b.WriteString("Connection: close\r\n")
	for k, v := range r.Header {
		b.WriteString(k + ": " + v + "\r\n")
	}
	b.WriteString("\r\n")
	if method != "HEAD" {
		b.Write(r.Body)
	}
	_, _ = io.WriteString(c, b.String())
}

// tokenBucket paces an action to a rate, with a burst.
type tokenBucket struct {
	tokens float64
	at     time.Time
}

// take refills the bucket to now at rate (burst at most) and says whether a token is there;
// if not, next is when one will be (zero for a rate of 0: never).
func (b *tokenBucket) take(now time.Time, rate, burst float64) (ok bool, next time.Time) {
	if rate <= 0 {
		return false, time.Time{}
	}
	if !b.at.IsZero() {
		b.tokens = min(burst, b.tokens+now.Sub(b.at).Seconds()*rate)
	} else {
		b.tokens = burst
	}
	b.at = now
	if b.tokens >= 1 {
		return true, time.Time{}
	}
	return false, now.Add(time.Duration((1 - b.tokens) / rate * float64(time.Second)))
}

// spend uses the token take found.
func (b *tokenBucket) spend() { b.tokens-- }
