package rollout

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"
)

// The Balancer as an L7 pooling proxy (NewPooledProxy), the stand-in for an ingress controller with
// upstream keep-alive (docs/benchmarks.md, "How the rollout harness works", has what it does and
// why). It opens a connection to a pod only when none of the pod's pooled ones is idle. A request
// it could not deliver, or whose connection the pod closed before answering, gets a 502 (503
// without endpoints), and the event is recorded for the client, as for the L4 Balancer.

// NewPooledProxy is NewBalancer for an L7 pooling proxy: one that forwards each HTTP/1.1
// request over a pool of keep-alive connections to the endpoint it picks for that request. Its
// Routes are requests; PoolDials are its connections to the endpoints.
func NewPooledProxy(addr string, endpoints []string) (*Balancer, error) {
	return newBalancer(addr, endpoints, true)
}

// pooledConn is one of the proxy's connections to a pod.
type pooledConn struct {
	c  *net.TCPConn
	br *bufio.Reader
}

// PoolDials returns every connection the pooling proxy opened to an endpoint so far, in order
// (none unless it is one): what the pods saw as new connections, where Routes are requests.
func (b *Balancer) PoolDials() []Route {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Route(nil), b.dials...)
}

// handlePooled serves one client connection of the pooling proxy, a request at a time, until the
// client closes it.
func (b *Balancer) handlePooled(client net.Conn) {
	if !b.track(client) {
		reset(client)
		return
	}
	defer func() {
		b.untrack(client)
		client.Close()
	}()
	addr := client.RemoteAddr().String()
	br, bw := bufio.NewReader(client), bufio.NewWriter(client)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return // the client closed its connection (the load's clients reset it once answered)
		}
		resp := b.forward(addr, req)
		if resp == nil {
			return // the Balancer is closing
		}
		resp.Close = req.Close
		if err := resp.Write(bw); err != nil || bw.Flush() != nil {
			return
		}
		if req.Close {
			// Answered "Connection: close": the client closes (with a RST: no TIME_WAIT here).
			_, _ = io.Copy(io.Discard, br)
			return
		}
	}
}

// forward sends req to the endpoint picked for it over a pooled connection and returns the
// answer, its body read in full, or a 502 or 503 of the proxy's own; nil if the Balancer is
// closing.
func (b *Balancer) forward(client string, req *http.Request) *http.Response {
	ep, _, ok := b.pick(client)
	if !ok {
		b.record(EventDialFailed, client, "", time.Time{})
		return proxyAnswer(req, http.StatusServiceUnavailable)
	}
	pc, err := b.take(ep)
	if err != nil {
		if errors.Is(err, net.ErrClosed) {
			return nil
		}
		kind := EventDialFailed
		if errors.Is(err, syscall.ECONNREFUSED) {
			kind = EventRefused
		}
		// Recorded before the answer, so that the client finds it once it sees the failure.
		b.record(kind, client, ep, time.Time{})
		return proxyAnswer(req, http.StatusBadGateway)
	}
	out := *req
	out.Header = req.Header.Clone()
	out.Header.Del("Connection") // the client's "close" is not the pool's
	out.Close = false
	delivered := time.Now()
	if err := out.Write(pc.c); err != nil {
		b.drop(pc)
		if errors.Is(err, net.ErrClosed) {
			return nil
		}
		b.record(EventUnread, client, ep, delivered)
		return proxyAnswer(req, http.StatusBadGateway)
	}
	resp, err := http.ReadResponse(pc.br, req)
	var body []byte
	if err == nil {
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err != nil {
		b.drop(pc)
		if errors.Is(err, net.ErrClosed) {
			return nil // Close ended the connection: nothing the pod did
		}
		// The pod closed the connection without answering: with a FIN, having read the request
		// (cut in flight or dropped on arrival, by how long it had it), or with a RST, unread.
		kind := EventUnread
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			kind = closedKind(time.Since(delivered), 0, b.CutAfter)
		}
		b.record(kind, client, ep, delivered)
		return proxyAnswer(req, http.StatusBadGateway)
	}
	if resp.Close {
		b.drop(pc) // the pod said it closes this one (Go's http.Server does once shutting down)
	} else {
		b.release(ep, pc)
	}
	resp.Header.Del("Connection")
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength, resp.TransferEncoding = int64(len(body)), nil
	return resp
}

// take returns an idle pooled connection to ep, the most recently used first (as nginx's
// upstream keepalive does), or a new one. A pooled connection the pod has closed meanwhile is
// dropped, as a proxy that watches its idle connections drops it.
func (b *Balancer) take(ep string) (*pooledConn, error) {
	for {
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return nil, net.ErrClosed
		}
		idle := b.idle[ep]
		if len(idle) == 0 {
			b.mu.Unlock()
			break
		}
		pc := idle[len(idle)-1]
		b.idle[ep] = idle[:len(idle)-1]
		b.mu.Unlock()
		if !peerClosed(pc.c) {
			return pc, nil
		}
		b.drop(pc)
	}
	c, err := b.dialEndpoint(ep)
	if err != nil {
		return nil, err
	}
	if !b.track(c) {
		reset(c)
		return nil, net.ErrClosed
	}
	b.mu.Lock()
	b.dials = append(b.dials, Route{Endpoint: ep, At: time.Now()})
	b.mu.Unlock()
	tc := c.(*net.TCPConn)
	return &pooledConn{c: tc, br: bufio.NewReader(tc)}, nil
}

// release puts pc back in ep's pool, listed or not: a removed pod's connections stay open, idle.
func (b *Balancer) release(ep string, pc *pooledConn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return // Close has reset it
	}
	b.idle[ep] = append(b.idle[ep], pc)
}

// drop closes a pooled connection for good.
func (b *Balancer) drop(pc *pooledConn) {
	b.untrack(pc.c)
	pc.c.Close()
}

// proxyAnswer is the proxy's own answer to req, with an empty body.
func proxyAnswer(req *http.Request, status int) *http.Response {
	return &http.Response{StatusCode: status, ProtoMajor: 1, ProtoMinor: 1, Request: req,
		Header: http.Header{}, Body: http.NoBody}
}
