package rollout

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Kind is the kind of a failed request.
type Kind string

// The failure kinds, as a client sees them.
const (
	Refused Kind = "refused" // the connection was refused (no listener behind the endpoint)
	Reset   Kind = "reset"   // the connection was reset
	EOF     Kind = "EOF"     // the connection was closed before the answer was complete
	Timeout Kind = "timeout" // no complete answer within the request timeout
	Non2xx  Kind = "non-2xx" // an answer, but not a 2xx
	Other   Kind = "other"   // anything else (e.g. out of local ports), so that nothing goes unseen
)

// Kinds lists the failure kinds in table order.
func Kinds() []Kind { return []Kind{Refused, Reset, EOF, Timeout, Non2xx, Other} }

// Mode is how a load client uses connections.
type Mode string

// The load modes.
const (
	NewConn   Mode = "new-conn"   // a new connection per request ("Connection: close")
	KeepAlive Mode = "keep-alive" // long-lived clients, each reusing its connection
)

// Failure is one request that failed, after the keep-alive retry if there was one.
type Failure struct {
	Mode    Mode
	Kind    Kind
	Sent    time.Time // the request started
	At      time.Time // the failure was seen
	Retried bool      // this is the retry's failure
	Err     string
	// Seen is what the Balancer saw end the connection, if anything (EventCut: the pod had been
	// working on the request).
	Seen EventKind
}

// Load is a steady load on one address, in both modes at once. Set the fields, then Start.
type Load struct {
	Addr string
	// Rate is the new-connection mode's requests per second (0: off).
	Rate float64
	// Poisson: the new-connection requests come as a Poisson stream (exponential gaps, seeded
	// by Seed), as independent clients' do and as drainwatch's automatic quiet period assumes;
	// otherwise one every 1/Rate, which hides the long gaps a real stream has.
	Poisson bool
	Seed    uint64
	// KeepAliveClients share KeepAliveRate requests per second (0: off), each on its own
	// connection, reconnecting when it is closed.
	KeepAliveClients int
	KeepAliveRate    float64
	// Timeout bounds each request, connect included.
	Timeout time.Duration
	// Explain says what the network saw end a failed connection, by the client's address (the
	// Balancer's Take); nil: nothing.
	Explain func(client string) (Event, bool)
}

// Running is a load under way.
type Running struct {
	stop chan struct{}
	wg   sync.WaitGroup

	requests  [2]atomic.Int64 // by mode: NewConn, KeepAlive
	started   atomic.Int64    // new-connection requests started
	begin     time.Time
	succeeded atomic.Int64
	retried   atomic.Int64

	mu       sync.Mutex
	failures []Failure
	stalls   []span // when the generator started a new-connection request late
}

// stalled records that a request due at due was started only at now.
func (r *Running) stalled(due, now time.Time) {
	r.mu.Lock()
	r.stalls = append(r.stalls, span{due, now})
	r.mu.Unlock()
}

// Stats is what a load did.
type Stats struct {
	NewConnRequests   int
	KeepAliveRequests int
	Succeeded         int
	Retried           int // keep-alive requests retried on a fresh connection
	Failures          []Failure
	// NewConnRate is the new-connection requests started per second, from Start to Stop: what
	// the generator achieved of Load.Rate (a busy machine starts them late).
	NewConnRate float64
	// Stalls are when the generator started a new-connection request more than stallAfter
	// after it was due: it sent nothing meanwhile.
	Stalls []span
}

// Start starts the load; it runs until Stop.
func (l *Load) Start() *Running {
	r := &Running{stop: make(chan struct{}), begin: time.Now()}
	if l.Rate > 0 {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			l.newConnLoop(r)
		}()
	}
	if l.KeepAliveClients > 0 && l.KeepAliveRate > 0 {
		every := time.Duration(float64(time.Second) * float64(l.KeepAliveClients) / l.KeepAliveRate)
		for i := range l.KeepAliveClients {
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				// Staggered, so that the clients' requests spread over the interval.
				l.keepAliveLoop(r, every, every*time.Duration(i)/time.Duration(l.KeepAliveClients))
			}()
		}
	}
	return r
}

// Succeeded is how many requests have succeeded so far.
func (r *Running) Succeeded() int { return int(r.succeeded.Load()) }

// Stop stops sending new requests and returns once every request under way has ended (each is
// bounded by the timeout, twice for a retried one).
func (r *Running) Stop() Stats {
	close(r.stop)
	elapsed := time.Since(r.begin)
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return Stats{
		NewConnRate:       float64(r.started.Load()) / elapsed.Seconds(),
		NewConnRequests:   int(r.requests[0].Load()),
		KeepAliveRequests: int(r.requests[1].Load()),
		Succeeded:         int(r.succeeded.Load()),
		Retried:           int(r.retried.Load()),
		Failures:          append([]Failure(nil), r.failures...),
		Stalls:            append([]span(nil), r.stalls...),
	}
}

func (r *Running) done(mode Mode, f *Failure) {
	if mode == NewConn {
		r.requests[0].Add(1)
	} else {
		r.requests[1].Add(1)
	}
	if f == nil {
		r.succeeded.Add(1)
		return
	}
	f.Mode = mode
	r.mu.Lock()
	r.failures = append(r.failures, *f)
	r.mu.Unlock()
}

func (l *Load) newConnLoop(r *Running) {
	var reqs sync.WaitGroup
	defer reqs.Wait()
	tick := l.ticks(r.stop, r.stalled)
	for range tick {
		r.started.Add(1)
		reqs.Add(1)
		go func() {
			defer reqs.Done()
			c := &client{addr: l.Addr, timeout: l.Timeout, explain: l.Explain}
			res := c.do()
			r.done(NewConn, res.failure())
		}()
	}
}

// ticks sends when each new-connection request is due, until stop is closed: every 1/Rate, or
// at the arrivals of a Poisson stream. A Poisson request that is due already (the generator
// fell behind, or two come within the timer's resolution) is sent at once, so the stream keeps
// its rate.
func (l *Load) ticks(stop <-chan struct{}, stalled func(due, now time.Time)) <-chan struct{} {
	out := make(chan struct{})
	go func() {
		defer close(out)
		if !l.Poisson {
			t := time.NewTicker(time.Duration(float64(time.Second) / l.Rate))
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case due := <-t.C:
					if now := time.Now(); now.Sub(due) > stallAfter {
						stalled(due, now)
					}
				}
				select {
				case out <- struct{}{}:
				case <-stop:
					return
				}
			}
		}
		rng := rand.New(rand.NewPCG(l.Seed, 0x9e3779b97f4a7c15))
		t := time.NewTimer(time.Hour)
		defer t.Stop()
		next := time.Now()
		for {
			next = next.Add(time.Duration(rng.ExpFloat64() / l.Rate * float64(time.Second)))
			if d := time.Until(next); d > 0 {
				t.Reset(d)
				select {
				case <-stop:
					return
				case <-t.C:
				}
			}
			if now := time.Now(); now.Sub(next) > stallAfter {
				stalled(next, now)
			}
			select {
			case out <- struct{}{}:
			case <-stop:
				return
			}
		}
	}()
	return out
}

func (l *Load) keepAliveLoop(r *Running, every, offset time.Duration) {
	select {
	case <-r.stop:
		return
	case <-time.After(offset):
	}
	c := &client{addr: l.Addr, timeout: l.Timeout, explain: l.Explain, keepAlive: true}
	defer c.close()
	// A Ticker drops ticks while a request is slower than the interval: the rate falls instead
	// of requests piling up, as a real client's would.
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		res := c.do()
		if res.err != nil && res.reused && res.got == 0 && res.kind != Timeout {
			// The connection was closed under the request before any answer: what every HTTP/1.1
			// client retries once on a fresh connection (RFC 9110 9.2.2: GET is idempotent).
			r.retried.Add(1)
			sent := res.sent
			res = c.do()
			if f := res.failure(); f != nil {
				f.Retried, f.Sent = true, sent
				r.done(KeepAlive, f)
			} else {
				r.done(KeepAlive, nil)
			}
		} else {
			r.done(KeepAlive, res.failure())
		}
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
	}
}

// client is one HTTP/1.1 client, written out so that each failure's kind and moment are exact.
type client struct {
	addr      string
	timeout   time.Duration
	explain   func(string) (Event, bool)
	keepAlive bool

	conn   net.Conn
	br     *bufio.Reader
	cr     *countingReader
	served int // requests answered on conn
}

// result is one attempt.
type result struct {
	sent, at time.Time
	kind     Kind
	err      error
	reused   bool   // the request went on a connection that had answered before
	got      int64  // bytes of the answer that arrived
	local    string // the client's end of the connection
	event    *Event
}

func (res result) failure() *Failure {
	if res.err == nil {
		return nil
	}
	f := &Failure{Kind: res.kind, Sent: res.sent, At: res.at, Err: res.err.Error()}
	if res.event != nil {
		f.Seen = res.event.Kind
	}
	return f
}

func (c *client) close() {
	if c.conn != nil {
		_ = c.conn.Close()
		c.conn = nil
	}
}

// closeAnswered closes a connection whose last answer arrived in full, with a RST rather than a
// FIN, so that it leaves no TIME_WAIT behind in the network namespace the harness shares with
// the pods. Under DNAT the client's side of the connection, and its TIME_WAIT, are on the
// client's machine; here they would double the TCP table that an adaptive drain outside a
// namespace of its own scans on every poll (drainwatch's sock-diag method walks it all), and
// make it poll less often than it would on a node. The Balancer passes the close on to the pod
// as the FIN it stands for (see flow.toPod), so the pod sees what it would under DNAT.
func (c *client) closeAnswered() {
	if tc, ok := c.conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.close()
}

// alive says whether the idle connection is still open, as an HTTP client's connection pool
// knows from its background read (Go's persistConn.readLoop): a closed one is dropped, not used.
func (c *client) alive() bool {
	_ = c.conn.SetReadDeadline(time.Now())
	_, err := c.br.Peek(1)
	_ = c.conn.SetReadDeadline(time.Time{})
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// do sends one GET and reads the whole answer.
func (c *client) do() result {
	res := result{sent: time.Now()}
	fail := func(kind Kind, err error) result {
		res.at, res.kind, res.err = time.Now(), kind, err
		if c.conn != nil {
			res.local = c.conn.LocalAddr().String()
		}
		if res.local != "" && c.explain != nil {
			if e, ok := c.explain(res.local); ok {
				res.event = &e
				if e.Kind == EventRefused {
					res.kind = Refused
				}
			}
		}
		c.close()
		return res
	}
	if c.conn != nil && !c.alive() {
		c.close()
	}
	if c.conn == nil {
		var local string
		d := net.Dialer{Timeout: c.timeout, Control: func(network, _ string, raw syscall.RawConn) error {
			var err error
			local, err = bindLocal(network, raw)
			return err
		}}
		conn, err := d.Dial("tcp", c.addr)
		if err != nil {
			res.local = local
			return fail(classify(err), err)
		}
		c.conn, c.served = conn, 0
		c.cr = &countingReader{r: conn}
		c.br = bufio.NewReader(c.cr)
	}
	res.reused = c.served > 0
	_ = c.conn.SetDeadline(res.sent.Add(c.timeout))
	req := "GET / HTTP/1.1\r\nHost: rollout\r\nUser-Agent: rollout-load\r\n"
	if !c.keepAlive {
		req += "Connection: close\r\n"
	}
	if _, err := io.WriteString(c.conn, req+"\r\n"); err != nil {
		return fail(classify(err), err)
	}
	start := c.cr.n
	resp, err := http.ReadResponse(c.br, nil)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	res.got = c.cr.n - start
	if err != nil {
		return fail(classify(err), err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fail(Non2xx, fmt.Errorf("status %s", resp.Status))
	}
	c.served++
	_ = c.conn.SetDeadline(time.Time{})
	if !c.keepAlive || resp.Close {
		c.closeAnswered()
	}
	res.at = time.Now()
	return res
}

// classify names a client-side error.
func classify(err error) Kind {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return Refused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return Reset
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return EOF
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return Timeout
	}
	return Other
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (cr *countingReader) Read(p []byte) (int, error) {
	n, err := cr.r.Read(p)
	cr.n += int64(n)
	return n, err
}
