package rollout

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// podServer is a test HTTP endpoint that answers with its name and counts its connections.
type podServer struct {
	addr string
	mu   sync.Mutex
	open map[net.Conn]bool
	seen int
}

func httpPod(t *testing.T, name string) *podServer {
	t.Helper()
	p := &podServer{open: map[net.Conn]bool{}}
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, name)
	}))
	ts.Config.ConnState = func(c net.Conn, s http.ConnState) {
		p.mu.Lock()
		defer p.mu.Unlock()
		switch s {
		case http.StateNew:
			p.open[c] = true
			p.seen++
		case http.StateClosed, http.StateHijacked:
			delete(p.open, c)
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	p.addr = ts.Listener.Addr().String()
	return p
}

// conns is how many connections the pod has had, and how many are open.
func (p *podServer) conns() (seen, open int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen, len(p.open)
}

func pooledBalancer(t *testing.T, endpoints ...string) *Balancer {
	t.Helper()
	return started(t, NewPooledProxy, endpoints)
}

// get sends a GET on c (closing it after the answer if close) and returns the answer's status
// and body.
func get(t *testing.T, c net.Conn, br *bufio.Reader, close bool) (int, string) {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(testDeadline))
	req := "GET / HTTP/1.1\r\nHost: rollout\r\n"
	if close {
		req += "Connection: close\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Close != close {
		t.Fatalf("answer's Connection: close %v, want %v", resp.Close, close)
	}
	return resp.StatusCode, string(body)
}

func dial(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, testDeadline)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

// The pooling proxy routes each request round-robin, over one keep-alive connection per pod
// (the requests come one at a time), whatever the client's connections; after the removal it
// sends the removed pod no request, opens it no connection, and leaves its pooled connection
// open, idle. Close ends them.
func TestPooledRoutesRequestsOverItsPool(t *testing.T) {
	a, b := httpPod(t, "a"), httpPod(t, "b")
	lb := pooledBalancer(t, a.addr, b.addr)
	ka, kabr := dial(t, lb.Addr())
	var got []string
	for i := range 8 {
		c, br, close := ka, kabr, false
		if i%2 == 1 { // every other request on a connection of its own, "Connection: close"
			c, br = dial(t, lb.Addr())
			close = true
		}
		status, who := get(t, c, br, close)
		if status != http.StatusOK {
			t.Fatalf("request %d: status %d", i, status)
		}
		got = append(got, who)
	}
	if strings.Join(got, "") != "abababab" {
		t.Fatalf("requests went to %v, want round-robin a b a b …", got)
	}
	for _, p := range []*podServer{a, b} {
		if seen, open := p.conns(); seen != 1 || open != 1 {
			t.Fatalf("a pod had %d connections, %d open, after 8 requests one at a time: want 1, open", seen, open)
		}
	}
	lb.Remove(a.addr)
	for range 3 {
		if _, who := get(t, ka, kabr, false); who != "b" {
			t.Fatalf("a request went to %s after a was removed", who)
		}
	}
	if seen, open := a.conns(); seen != 1 || open != 1 {
		t.Fatalf("the removed pod: %d connections, %d open; want its pooled one, still open", seen, open)
	}
	n := map[string]int{}
	for _, r := range lb.Routes() {
		n[r.Endpoint]++
	}
	if n[a.addr] != 4 || n[b.addr] != 7 {
		t.Fatalf("routes %v, want 4 requests to a and 7 to b", n)
	}
	if d := lb.PoolDials(); len(d) != 2 {
		t.Fatalf("pool dials %+v, want one to each pod", d)
	}
	if ev := lb.Events(); len(ev) != 0 {
		t.Fatalf("events %v on healthy requests", ev)
	}
	if err := lb.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(testDeadline)
	for {
		_, openA := a.conns()
		_, openB := b.conns()
		if openA == 0 && openB == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pooled connections still open 10s after Close: a %d, b %d", openA, openB)
		}
		time.Sleep(time.Millisecond)
	}
}

// No retries: a request to a pod that refuses is answered 502, and the client learns the refusal
// by its address, as from the L4 Balancer; without endpoints, 503.
func TestPooledRefusedIsExplained(t *testing.T) {
	dead := deadEndpoint(t)
	lb := pooledBalancer(t, dead)
	c := &client{addr: lb.Addr(), timeout: testDeadline, explain: lb.Take, keepAlive: true}
	res := c.do()
	if res.kind != Refused || res.event == nil || res.event.Kind != EventRefused {
		t.Fatalf("kind %s (%v), event %+v: want refused", res.kind, res.err, res.event)
	}
	if !strings.Contains(res.err.Error(), "502") {
		t.Fatalf("error %v, want the proxy's 502", res.err)
	}
	lb.Remove(dead)
	conn, br := dial(t, lb.Addr())
	if status, _ := get(t, conn, br, false); status != http.StatusServiceUnavailable {
		t.Fatalf("no endpoints: status %d, want 503", status)
	}
}

// A pod that closes a pooled connection with a request on it fails that request (502): cut in
// flight when it had it for CutAfter, dropped on arrival when sooner, unread on a RST.
func TestPooledClosedInFlight(t *testing.T) {
	for _, tt := range []struct {
		name     string
		cutAfter time.Duration
		serve    func(net.Conn)
		want     EventKind
	}{
		{"cut", time.Nanosecond, func(c net.Conn) { _ = readRequest(bufio.NewReader(c)); c.Close() }, EventCut},
		{"dropped", time.Hour, func(c net.Conn) { _ = readRequest(bufio.NewReader(c)); c.Close() }, EventDropped},
		{"unread", time.Nanosecond, func(c net.Conn) { peekWait(c); c.Close() }, EventUnread},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lb := pooledBalancer(t, backend(t, tt.serve))
			lb.CutAfter = tt.cutAfter
			c := &client{addr: lb.Addr(), timeout: testDeadline, explain: lb.Take, keepAlive: true}
			res := c.do()
			if res.kind != Non2xx || !strings.Contains(res.err.Error(), "502") {
				t.Fatalf("kind %s (%v), want the proxy's 502", res.kind, res.err)
			}
			if res.event == nil || res.event.Kind != tt.want {
				t.Fatalf("balancer event %+v, want %s", res.event, tt.want)
			}
		})
	}
}

// A pooled connection the pod closed while idle (a graceful app closes its idle connections as
// it stops) is dropped, not used: the next request goes over a new one and succeeds.
func TestPooledDropsConnectionsThePodClosed(t *testing.T) {
	served := make(chan struct{}, 1)
	ep := backend(t, func(c net.Conn) {
		defer c.Close()
		if readRequest(bufio.NewReader(c)) != nil {
			return
		}
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		served <- struct{}{} // then closes the idle connection
	})
	lb := pooledBalancer(t, ep)
	c, br := dial(t, lb.Addr())
	if status, _ := get(t, c, br, false); status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	<-served
	deadline := time.Now().Add(testDeadline)
	for {
		lb.mu.Lock()
		idle := lb.idle[ep]
		closed := len(idle) == 1 && peerClosed(idle[0].c)
		lb.mu.Unlock()
		if closed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the pod's close of the pooled connection did not arrive in 10s")
		}
		time.Sleep(time.Millisecond)
	}
	if status, body := get(t, c, br, false); status != http.StatusOK || body != "ok" {
		t.Fatalf("after the pod closed the idle connection: %d %q, want 200", status, body)
	}
	if d := lb.PoolDials(); len(d) != 2 {
		t.Fatalf("pool dials %+v, want 2", d)
	}
	if ev := lb.Events(); len(ev) != 0 {
		t.Fatalf("events %v", ev)
	}
}
