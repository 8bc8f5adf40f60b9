package http1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
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
type Server struct {
	Handler Handler
	// ReadTimeout bounds reading the request head and body; a client that sends its headers a
	// byte at a time is cut off at it.
	ReadTimeout time.Duration
	// HandlerTimeout bounds the handler (a /prestop answer waits up to the grace period).
	HandlerTimeout time.Duration
	// WriteTimeout bounds writing the response.
	WriteTimeout time.Duration
	// MaxConns bounds connections served at once; more are closed at once (0: 64).
	MaxConns int
	// AcceptError, when set, hears of each failed accept (out of file descriptors, say); Serve
	// retries after retry.
	AcceptError func(err error, retry time.Duration)

	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]struct{}
	closed bool
	ctx    context.Context
	cancel context.CancelFunc
}

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
	s.conns = map[net.Conn]struct{}{}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.mu.Unlock()
	limit := s.MaxConns
	if limit <= 0 {
		limit = 64
	}
	slots := make(chan struct{}, limit)
	var backoff time.Duration
	for {
		c, err := ln.Accept()
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
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-s.ctx.Done():
				t.Stop()
				return ErrServerClosed
			}
			continue
		}
		backoff = 0
		select {
		case slots <- struct{}{}:
		default:
			c.Close() // full: shed load rather than queue it
			continue
		}
		if !s.track(c) {
			c.Close()
			<-slots
			continue
		}
		go func() {
			defer func() { <-slots }()
			defer s.untrack(c)
			s.serveConn(c)
		}()
	}
}

func (s *Server) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Server) untrack(c net.Conn) {
	c.Close()
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
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
	for c := range s.conns {
		c.Close()
	}
	return err
}

func (s *Server) serveConn(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(s.ReadTimeout))
	cr := &countingReader{r: c}
	br := bufio.NewReaderSize(cr, 4096)
	req, err := parseRequest(br)
	if err != nil {
		var ne net.Error
		switch {
		case errors.Is(err, io.EOF), errors.As(err, &ne) && ne.Timeout() && cr.n == 0:
			return // nothing was sent: nothing to answer
		case errors.As(err, &ne) && ne.Timeout():
			s.write(c, "", Response{Status: 408, Body: []byte("request timeout\n")})
		case errors.Is(err, ErrHeaderTooLarge):
			s.write(c, "", Response{Status: 431, Body: []byte("header fields too large\n")})
		case errors.Is(err, errChunked):
			s.write(c, "", Response{Status: 501, Body: []byte("chunked bodies not supported\n")})
		default:
			s.write(c, "", Response{Status: 400, Body: []byte("bad request\n")})
		}
		return
	}
	if req.body > MaxBodyBytes {
		s.write(c, req.Method, Response{Status: 413, Body: []byte("body too large\n")})
		return
	}
	// Read the body out (it is not used) so that closing the connection does not reset it
	// under the client before it has read the answer.
	if _, err := io.CopyN(io.Discard, br, req.body); err != nil {
		return
	}
	req.RemoteAddr = c.RemoteAddr().String()
	ctx, cancel := context.WithTimeout(s.ctx, s.HandlerTimeout)
	defer cancel()
	resp := s.Handler(ctx, req)
	s.write(c, req.Method, resp)
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
