package rollout

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const testDeadline = 10 * time.Second

// backend is a test endpoint: each accepted connection is handed to serve.
func backend(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
	return ln.Addr().String()
}

// named answers every line it reads with its name, until the client closes.
func named(name string) func(net.Conn) {
	return func(c net.Conn) {
		defer c.Close()
		br := bufio.NewReader(c)
		for {
			if _, err := br.ReadString('\n'); err != nil {
				return
			}
			if _, err := io.WriteString(c, name+"\n"); err != nil {
				return
			}
		}
	}
}

func balancer(t *testing.T, endpoints ...string) *Balancer {
	t.Helper()
	return started(t, NewBalancer, endpoints)
}

// started is a Balancer made by newBalancer, closed at the end of the test.
func started(t *testing.T, newBalancer func(string, []string) (*Balancer, error), endpoints []string) *Balancer {
	t.Helper()
	b, err := newBalancer("127.0.0.1:0", endpoints)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// ask sends a line on c and returns the answer.
func ask(t *testing.T, c net.Conn, br *bufio.Reader) string {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(testDeadline))
	if _, err := io.WriteString(c, "who\n"); err != nil {
		t.Fatal(err)
	}
	s, err := br.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(s)
}

func dialAsk(t *testing.T, addr string) (net.Conn, *bufio.Reader, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, testDeadline)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	br := bufio.NewReader(c)
	return c, br, ask(t, c, br)
}

func TestBalancerRoundRobinRemoveKeepsEstablished(t *testing.T) {
	a, b := backend(t, named("a")), backend(t, named("b"))
	lb := balancer(t, a, b)
	var got []string
	var toA net.Conn
	var toABr *bufio.Reader
	for range 4 {
		c, br, who := dialAsk(t, lb.Addr())
		got = append(got, who)
		if who == "a" && toA == nil {
			toA, toABr = c, br
		}
	}
	if strings.Join(got, "") != "abab" {
		t.Fatalf("new connections went to %v, want round-robin a b a b", got)
	}
	lb.Remove(a)
	if lb.RemovedAt(a).IsZero() {
		t.Fatal("RemovedAt is zero after Remove")
	}
	for range 3 {
		if _, _, who := dialAsk(t, lb.Addr()); who != "b" {
			t.Fatalf("a new connection went to %s after a was removed", who)
		}
	}
	// An established connection keeps flowing to the removed endpoint.
	if who := ask(t, toA, toABr); who != "a" {
		t.Fatalf("the established connection to a answered %q after the removal", who)
	}
	n := map[string]int{}
	for _, r := range lb.Routes() {
		n[r.Endpoint]++
	}
	if n[a] != 2 || n[b] != 5 {
		t.Fatalf("routes %v, want 2 to a and 5 to b", n)
	}
	if ev := lb.Events(); len(ev) != 0 {
		t.Fatalf("events %v on healthy connections", ev)
	}
}

// deadEndpoint is an address nobody listens on.
func deadEndpoint(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// A refused endpoint reaches the client as a failed connection, and Take names it as a refusal
// by the client's address: what DNAT would have shown as ECONNREFUSED.
func TestBalancerRefusedIsExplained(t *testing.T) {
	lb := balancer(t, deadEndpoint(t))
	c := &client{addr: lb.Addr(), timeout: testDeadline, explain: lb.Take}
	res := c.do()
	if res.err == nil {
		t.Fatal("a request to a dead endpoint succeeded")
	}
	if res.kind != Refused {
		t.Fatalf("kind %s (%v), want refused", res.kind, res.err)
	}
	if res.event == nil || res.event.Kind != EventRefused {
		t.Fatalf("balancer event %+v, want refused", res.event)
	}
	if _, ok := lb.Take(res.local); ok {
		t.Fatal("Take returned the same event twice")
	}
}

// readRequest reads one HTTP request head.
func readRequest(br *bufio.Reader) error {
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		if line == "\r\n" {
			return nil
		}
	}
}

// A request the pod read and closed the connection on unanswered: cut in flight when the pod had
// had it for CutAfter, dropped on arrival when sooner.
func TestBalancerCutOrDropped(t *testing.T) {
	for _, tt := range []struct {
		cutAfter time.Duration
		want     EventKind
	}{{time.Nanosecond, EventCut}, {time.Hour, EventDropped}} {
		t.Run(string(tt.want), func(t *testing.T) {
			ep := backend(t, func(c net.Conn) {
				_ = readRequest(bufio.NewReader(c))
				c.Close() // read, never answered: a FIN
			})
			lb := balancer(t, ep)
			lb.CutAfter = tt.cutAfter
			c := &client{addr: lb.Addr(), timeout: testDeadline, explain: lb.Take}
			res := c.do()
			if res.kind != EOF {
				t.Fatalf("kind %s (%v), want EOF", res.kind, res.err)
			}
			if res.event == nil || res.event.Kind != tt.want {
				t.Fatalf("balancer event %+v, want %s", res.event, tt.want)
			}
			if res.event.Delivered.IsZero() || res.event.At.Before(res.event.Delivered) {
				t.Fatalf("event times: delivered %v, at %v", res.event.Delivered, res.event.At)
			}
		})
	}
}

// peekWait blocks until c has data to read, without reading it.
func peekWait(c net.Conn) {
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return
	}
	buf := make([]byte, 1)
	_ = raw.Read(func(fd uintptr) bool {
		_, _, err := unix.Recvfrom(int(fd), buf, unix.MSG_PEEK)
		return !errors.Is(err, unix.EAGAIN)
	})
}

func TestBalancerUnreadIsNotACut(t *testing.T) {
	ep := backend(t, func(c net.Conn) {
		peekWait(c)
		c.Close() // the request is still unread: a RST
	})
	lb := balancer(t, ep)
	c := &client{addr: lb.Addr(), timeout: testDeadline, explain: lb.Take}
	res := c.do()
	if res.kind != Reset {
		t.Fatalf("kind %s (%v), want reset", res.kind, res.err)
	}
	if res.event == nil || res.event.Kind != EventUnread {
		t.Fatalf("balancer event %+v, want unread", res.event)
	}
}

func TestPeerClosed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if peerClosed(c.(*net.TCPConn)) {
		t.Fatal("peerClosed on an open connection")
	}
	s.Close()
	deadline := time.Now().Add(testDeadline)
	for !peerClosed(c.(*net.TCPConn)) {
		if time.Now().After(deadline) {
			t.Fatal("peerClosed still false 10s after the peer closed")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestBalancerCloseEndsEstablished(t *testing.T) {
	lb, err := NewBalancer("127.0.0.1:0", []string{backend(t, named("a"))})
	if err != nil {
		t.Fatal(err)
	}
	c, br, _ := dialAsk(t, lb.Addr())
	if err := lb.Close(); err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(testDeadline))
	_, _ = io.WriteString(c, "who\n")
	if _, err := br.ReadString('\n'); err == nil {
		t.Fatal("a connection still answered after Close")
	} else if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the connection hung after Close: %v", err)
	}
}

// A client that resets its connection once it has its answer (the load's new-connection clients,
// so as to leave no TIME_WAIT on the host) closes it, as far as the pod can tell: the pod reads
// EOF, as it would from a client's FIN under DNAT, and the pod's side is not reset. The Route
// says who closed first.
func TestBalancerClientResetAfterAnswerIsAClose(t *testing.T) {
	for _, podFirst := range []bool{false, true} {
		name := "client first"
		if podFirst {
			name = "pod first"
		}
		t.Run(name, func(t *testing.T) {
			podErr := make(chan error, 1)
			ep := backend(t, func(c net.Conn) {
				defer c.Close()
				br := bufio.NewReader(c)
				if _, err := br.ReadString('\n'); err != nil {
					podErr <- err
					return
				}
				if _, err := io.WriteString(c, "a\n"); err != nil {
					podErr <- err
					return
				}
				if podFirst {
					_ = c.(*net.TCPConn).CloseWrite()
				}
				_ = c.SetReadDeadline(time.Now().Add(testDeadline))
				_, err := br.ReadString('\n')
				podErr <- err
			})
			lb := balancer(t, ep)
			c, br, who := dialAsk(t, lb.Addr())
			if who != "a" {
				t.Fatalf("answer %q", who)
			}
			if podFirst {
				// The pod's FIN has come through: the client closes second, as HTTP clients do
				// after a "Connection: close" answer.
				_ = c.SetReadDeadline(time.Now().Add(testDeadline))
				if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
					t.Fatalf("the pod's close reached the client as %v, want EOF", err)
				}
			}
			cl := &client{conn: c}
			cl.closeAnswered()
			if err := <-podErr; !errors.Is(err, io.EOF) {
				t.Fatalf("the pod saw the client's reset as %v, want EOF", err)
			}
			routes := lb.Routes()
			if len(routes) != 1 || routes[0].ClientClosedFirst != !podFirst {
				t.Fatalf("routes %+v, want one with ClientClosedFirst %v", routes, !podFirst)
			}
		})
	}
}

// TestClosedKindNetOfLateness: a close counts as a cut only when the pod had the request for
// CutAfter even if the harness saw the close as late as its timers came late.
func TestClosedKindNetOfLateness(t *testing.T) {
	const cutAfter = 20 * time.Millisecond
	for _, c := range []struct {
		held, late time.Duration
		want       EventKind
	}{
		{30 * time.Millisecond, 0, EventCut},
		{30 * time.Millisecond, 5 * time.Millisecond, EventCut},
		{30 * time.Millisecond, 15 * time.Millisecond, EventDropped},
		{cutAfter, 0, EventCut},
		{cutAfter - time.Nanosecond, 0, EventDropped},
	} {
		if got := closedKind(c.held, c.late, cutAfter); got != c.want {
			t.Errorf("closedKind(held %s, late %s, cutAfter %s) = %s, want %s", c.held, c.late, cutAfter, got, c.want)
		}
	}
}
