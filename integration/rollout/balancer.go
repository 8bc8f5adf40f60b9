package rollout

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
)

// EventKind is what the Balancer saw end a connection badly.
type EventKind string

// The events the Balancer records.
const (
	// EventRefused: the pod refused the connection (no listener). Under DNAT the client's connect
	// itself would have failed with ECONNREFUSED.
	EventRefused EventKind = "refused"
	// EventDialFailed: the pod could not be reached for another reason (timeout, no endpoint).
	EventDialFailed EventKind = "dial-failed"
	// EventCut: a request cut in flight. The pod had read it, had had it for at least the
	// Balancer's CutAfter, and closed the connection without answering.
	EventCut EventKind = "cut"
	// EventDropped: the pod read a request and closed the connection unanswered within CutAfter
	// of receiving it: it was closing as the request arrived (Go's http.Server drops a request it
	// reads once Shutdown has begun), not working on it. Clients retry such a request on a reused
	// connection.
	EventDropped EventKind = "dropped"
	// EventUnread: the pod closed the connection with a request still unread in its socket (it
	// never saw it: the RST a socket closed with unread data sends).
	EventUnread EventKind = "unread"
)

// closedKind is what a request the pod closed unanswered, having read it, was: cut in flight
// when the pod surely had it for cutAfter, even had the harness's own timers come late by up to
// late (the harness may have seen the close that much after it happened); dropped on arrival
// otherwise. The Balancer decides with late = 0, as it goes; a run decides again with its worst
// lateness, once known.
func closedKind(held, late, cutAfter time.Duration) EventKind {
	if held-late >= cutAfter {
		return EventCut
	}
	return EventDropped
}

// DefaultCutAfter is the Balancer's CutAfter unless set.
const DefaultCutAfter = 20 * time.Millisecond

// Event is one connection the Balancer saw end badly (from a pooling proxy, one request).
type Event struct {
	Kind     EventKind
	Client   string // the client's address (its end of the connection to the Balancer)
	Endpoint string
	At       time.Time
	// Delivered is when the request the pod dropped was handed to it (EventCut, EventDropped, EventUnread).
	Delivered time.Time
}

// Route is one connection the Balancer sent to an endpoint (from a pooling proxy, one request).
type Route struct {
	Endpoint string
	At       time.Time
	// ClientClosedFirst: the client closed its side, and the Balancer passed the FIN on, before
	// the pod had closed its own. The pod then closes passively and its socket leaves the TCP
	// table at once instead of staying in TIME_WAIT: a snapshot of the table sees the connection
	// only while it is open (what an adaptive drain outside the pod's own network namespace
	// can miss).
	ClientClosedFirst bool
}

// Balancer is the kube-proxy stand-in: an L4 TCP load balancer that picks an endpoint round-robin
// for each new connection and then copies bytes both ways, with no retries and no health checks,
// as iptables DNAT does. Endpoint changes only affect new connections. NewPooledProxy makes one
// that is an L7 proxy instead (pooled.go). Its methods are safe for concurrent use.
type Balancer struct {
	// CutAfter is how long the pod must have had a request it drops for the drop to count as a
	// cut in flight (EventCut) rather than a drop on arrival (EventDropped). A pod picks a
	// request up within microseconds when all is well: keep it well under the app's request
	// time. Set it before the first connection.
	CutAfter time.Duration
	// Dial connects to an endpoint (nil: net.DialTimeout in the harness's network namespace):
	// the runner dials a pod inside the pod's own namespace. Set it before the first connection.
	Dial func(addr string, timeout time.Duration) (net.Conn, error)

	pooled      bool // an L7 pooling proxy (NewPooledProxy)
	ln          net.Listener
	dialTimeout time.Duration
	wg          sync.WaitGroup

	mu        sync.Mutex
	endpoints []string
	next      int
	removed   map[string]time.Time
	routes    []Route
	events    []Event
	pending   map[string]Event // by client address, until Take
	open      map[net.Conn]struct{}
	closed    bool
	idle      map[string][]*pooledConn // pooled: the idle connections to each endpoint
	dials     []Route                  // pooled: the connections it opened to the endpoints
}

// NewBalancer listens on addr (e.g. "127.0.0.1:0") and serves until Close.
func NewBalancer(addr string, endpoints []string) (*Balancer, error) {
	return newBalancer(addr, endpoints, false)
}

func newBalancer(addr string, endpoints []string, pooled bool) (*Balancer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("balancer: %w", err)
	}
	b := &Balancer{
		pooled:      pooled,
		CutAfter:    DefaultCutAfter,
		ln:          ln,
		dialTimeout: 3 * time.Second,
		endpoints:   append([]string(nil), endpoints...),
		removed:     map[string]time.Time{},
		pending:     map[string]Event{},
		open:        map[net.Conn]struct{}{},
		idle:        map[string][]*pooledConn{},
	}
	b.wg.Add(1)
	go b.serve()
	return b, nil
}

// Addr is the address clients connect to.
func (b *Balancer) Addr() string { return b.ln.Addr().String() }

// Remove drops ep from the endpoint list: new connections no longer go to it; established ones
// keep flowing.
func (b *Balancer) Remove(ep string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, e := range b.endpoints {
		if e == ep {
			b.endpoints = append(b.endpoints[:i:i], b.endpoints[i+1:]...)
			b.removed[ep] = time.Now()
			return
		}
	}
}

// RemovedAt is when ep was removed (zero if it was not).
func (b *Balancer) RemovedAt(ep string) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.removed[ep]
}

// Routes returns every connection sent to an endpoint so far, in order (from a pooling proxy,
// every request).
func (b *Balancer) Routes() []Route {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Route(nil), b.routes...)
}

// Events returns every bad connection end seen so far, in order.
func (b *Balancer) Events() []Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Event(nil), b.events...)
}

// Take returns and forgets the event recorded for the connection from client, if any. The event
// is recorded before the client's connection is ended, so a client that saw its connection fail
// finds it.
func (b *Balancer) Take(client string) (Event, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.pending[client]
	delete(b.pending, client)
	return e, ok
}

// Close stops accepting, resets every connection still open and returns once every goroutine of
// the Balancer has ended.
func (b *Balancer) Close() error {
	err := b.ln.Close()
	b.mu.Lock()
	b.closed = true
	for c := range b.open {
		reset(c)
	}
	b.mu.Unlock()
	b.wg.Wait()
	return err
}

func (b *Balancer) serve() {
	defer b.wg.Done()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // e.g. EMFILE: the client sees its connection fail, as with a full backlog
		}
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			b.handle(c)
		}()
	}
}

// pick chooses the endpoint for a new connection from client (in a pooling proxy, for a request),
// round-robin, and returns the index of its Route.
func (b *Balancer) pick(client string) (string, int, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.pending, client) // a reused client port: what happened to the old connection is stale
	if len(b.endpoints) == 0 {
		return "", 0, false
	}
	ep := b.endpoints[b.next%len(b.endpoints)]
	b.next++
	b.routes = append(b.routes, Route{Endpoint: ep, At: time.Now()})
	return ep, len(b.routes) - 1, true
}

// clientClosedFirst marks route i (see Route.ClientClosedFirst).
func (b *Balancer) clientClosedFirst(i int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.routes[i].ClientClosedFirst = true
}

func (b *Balancer) record(kind EventKind, client, ep string, delivered time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := Event{Kind: kind, Client: client, Endpoint: ep, At: time.Now(), Delivered: delivered}
	b.events = append(b.events, e)
	b.pending[client] = e
}

// track registers c for Close; false if the Balancer is closing.
func (b *Balancer) track(cs ...net.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	for _, c := range cs {
		b.open[c] = struct{}{}
	}
	return true
}

func (b *Balancer) untrack(cs ...net.Conn) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range cs {
		delete(b.open, c)
	}
}

// dialEndpoint connects to ep with Dial.
func (b *Balancer) dialEndpoint(ep string) (net.Conn, error) {
	if b.Dial != nil {
		return b.Dial(ep, b.dialTimeout)
	}
	return net.DialTimeout("tcp", ep, b.dialTimeout)
}

func (b *Balancer) handle(client net.Conn) {
	if b.pooled {
		b.handlePooled(client)
		return
	}
	addr := client.RemoteAddr().String()
	ep, route, ok := b.pick(addr)
	if !ok {
		b.record(EventDialFailed, addr, "", time.Time{})
		reset(client)
		return
	}
	up, err := b.dialEndpoint(ep)
	if err != nil {
		kind := EventDialFailed
		if errors.Is(err, syscall.ECONNREFUSED) {
			kind = EventRefused
		}
		// Recorded before the reset, so that the client finds it once it sees the failure.
		b.record(kind, addr, ep, time.Time{})
		reset(client)
		return
	}
	if !b.track(client, up) {
		reset(client)
		reset(up)
		return
	}
	f := &flow{b: b, client: client.(*net.TCPConn), up: up.(*net.TCPConn), addr: addr, ep: ep, route: route}
	done := make(chan struct{})
	go func() {
		f.fromPod()
		close(done)
	}()
	f.toPod()
	<-done
	b.untrack(client, up)
	client.Close()
	up.Close()
}

// flow is one proxied connection. awaiting is true from the moment client bytes are handed to the
// pod until the pod sends something back: a request the pod has and has not answered.
type flow struct {
	b          *Balancer
	client, up *net.TCPConn
	addr, ep   string
	route      int // index in b.routes

	mu       sync.Mutex
	awaiting time.Time // zero: nothing awaits an answer
}

func (f *flow) setAwaiting(v bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case !v:
		f.awaiting = time.Time{}
	case f.awaiting.IsZero():
		f.awaiting = time.Now()
	}
}

func (f *flow) awaitingSince() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.awaiting
}

// toPod copies the client's bytes to the pod until the client closes its side.
func (f *flow) toPod() {
	buf := make([]byte, 16<<10)
	for {
		n, err := f.client.Read(buf)
		if n > 0 {
			// The pod closed its side already (its FIN is on its way to the client): the bytes
			// would only draw a RST, so the request never reaches it. Checked on the socket
			// itself, not on what fromPod has read yet, so that a FIN that arrived first is never
			// mistaken for a request cut.
			if peerClosed(f.up) {
				continue
			}
			f.setAwaiting(true)
			if _, werr := f.up.Write(buf[:n]); werr != nil {
				reset(f.client)
				return
			}
		}
		if err != nil {
			// A reset with no request awaiting an answer is a client done with its connection
			// (the load's clients close that way so as to leave no TIME_WAIT on this host, see
			// client.closeAnswered): it reaches the pod as the FIN it stands for.
			closed := errors.Is(err, io.EOF) || (errors.Is(err, syscall.ECONNRESET) && f.awaitingSince().IsZero())
			if closed {
				if !peerClosed(f.up) {
					f.b.clientClosedFirst(f.route)
				}
				_ = f.up.CloseWrite()
			} else {
				reset(f.up)
			}
			return
		}
	}
}

// fromPod copies the pod's bytes to the client until the pod closes its side, and records a
// request the pod dropped.
func (f *flow) fromPod() {
	buf := make([]byte, 16<<10)
	for {
		n, err := f.up.Read(buf)
		if n > 0 {
			f.setAwaiting(false)
			if _, werr := f.client.Write(buf[:n]); werr != nil {
				reset(f.up)
				return
			}
		}
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return // toPod or Close ended the connection: nothing the pod did
			}
			eof := errors.Is(err, io.EOF)
			if since := f.awaitingSince(); !since.IsZero() {
				// A FIN means the pod had read everything it was sent; a RST that it closed the
				// socket with the request unread.
				kind := EventUnread
				if eof {
					kind = closedKind(time.Since(since), 0, f.b.CutAfter)
				}
				f.b.record(kind, f.addr, f.ep, since)
			}
			if eof {
				_ = f.client.CloseWrite()
			} else {
				reset(f.client)
			}
			return
		}
	}
}

// reset ends c with a RST, as a host does for a connection nobody listens for.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}
