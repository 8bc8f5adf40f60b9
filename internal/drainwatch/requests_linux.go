package drainwatch

import (
	"errors"
	"time"

	"github.com/drainit/drainit/internal/config"
)

// requestWatch reads the app's open incoming connections, with what each has received, through
// a sock_diag socket of its own that asks for every socket's tcp_info: requests that come over
// connections already open, which no count of new connections sees (docs/adaptive-drain.md,
// "Requests on open connections").
type requestWatch struct {
	diag      *diagConn
	endpoints []config.Endpoint
	filter    []byte // the watched listeners' local ends (endpointFilter; nil past its size)
	v4, v6    bool
	// conns is each connection's state at the last poll, by cookie; next is the one being
	// filled, swapped in at the end of a poll.
	conns, next map[uint64]connState
	now         time.Time
	busy        int // connections whose data came within `within` (poll's argument)
	within      time.Duration
	visit       func(*Socket) // bound once: not a closure per poll
	active      int           // connections counted at this poll
	noInfo      bool          // a socket came without a tcp_info the watch can read
}

// errNoTCPInfo: the kernel's tcp_info lacks what the watch reads (before Linux 4.1), or it sent
// none; counted without it, requests on open connections would go unseen in silence.
var errNoTCPInfo = errors.New("the kernel does not report what a connection has received (tcp_info's tcpi_bytes_received, Linux 4.1+)")

// countEvery is the least time between two counts of one connection: one that receives data
// without a pause (an upload) would otherwise pass for a rate of requests that makes the
// automatic quiet period short. Data held back by it is counted once it has passed (pending), so
// that the silence never starts before the last data; and a connection that received data while
// watched and is gone counts once more, at the poll that finds it gone, for its last data may
// have come after the last poll that saw it (a proxy closes its pooled connections right after
// their last requests).
const countEvery = DefaultInterval

// connState is what requestWatch keeps of a connection between polls.
type connState struct {
	received uint64    // tcpi_bytes_received
	counted  time.Time // when it was last counted
	pending  bool      // it has received data since, not yet counted
	carried  bool      // it has received data since it was first seen
}

// newRequestWatch opens the watch on the connections to endpoints, in the IPv4 table, the IPv6
// one, or both; nil when sock_diag is unavailable.
func newRequestWatch(endpoints []config.Endpoint, v4, v6 bool) *requestWatch {
	diag, err := openDiag()
	if err != nil {
		return nil
	}
	diag.info = true
	w := &requestWatch{diag: diag, endpoints: endpoints, filter: endpointFilter(endpoints), v4: v4, v6: v6,
		conns: map[uint64]connState{}, next: map[uint64]connState{}}
	w.visit = w.add
	return w
}

func (w *requestWatch) add(s *Socket) {
	if !s.Info.OK {
		w.noInfo = true
		return
	}
	if w.filter == nil && !toAny(w.endpoints, s) {
		return // no filter in the kernel (too many endpoints for one): every socket comes
	}
	c, seen := w.conns[s.Cookie]
	if seen && s.Info.BytesReceived > c.received {
		c.pending, c.carried = true, true
	}
	if !seen {
		// New since the last poll: the sampler beside counts it as a new connection.
		c = connState{counted: w.now}
	}
	c.received = s.Info.BytesReceived
	if c.pending && w.now.Sub(c.counted) >= countEvery {
		w.active++
		c.counted, c.pending = w.now, false
	}
	w.next[s.Cookie] = c
	if s.Info.LastDataRecv < w.within {
		w.busy++
	}
}

// poll reads the open connections at now and returns how many are counted as having received
// data (see countEvery; the first poll, a baseline, counts none) and how many received data
// within the last within. A connection opened since the previous poll is not counted here but
// as a new connection, which the sampler beside counts.
func (w *requestWatch) poll(now time.Time, within time.Duration) (active, busy int, err error) {
	w.active, w.busy, w.within, w.now, w.noInfo = 0, 0, within, now, false
	clear(w.next)
	if err := w.diag.dumpTables(w.v4, w.v6, 1<<Established, w.filter, w.visit); err != nil {
		return 0, 0, err
	}
	for cookie, c := range w.conns {
		if _, open := w.next[cookie]; !open && c.carried {
			w.active++ // gone since the last poll: see countEvery
		}
	}
	w.conns, w.next = w.next, w.conns
	if w.noInfo {
		return 0, 0, errNoTCPInfo
	}
	return w.active, w.busy, nil
}

func (w *requestWatch) close() { w.diag.close() }

// requestSampler counts, beside the new connections its base sampler counts, the open
// connections that received data since the last poll: each is at least one request still
// routed to the pod (--drain-watch requests).
//
// Without count (--drain-watch connections) it counts new connections only, and the watch serves
// busyConns at the end of the drain.
type requestSampler struct {
	sampler
	now    func() time.Time
	w      *requestWatch
	count  bool
	counts int // the open connections' counts sample has added, in all
}

func (s *requestSampler) sample() (int, error) {
	n, err := s.sampler.sample()
	if err != nil || !s.count {
		return n, err
	}
	active, _, err := s.w.poll(s.now(), 0)
	if err != nil {
		return 0, err
	}
	s.counts += active
	return n + active, nil
}

func (s *requestSampler) openCounts() int { return s.counts }

func (s *requestSampler) base() sampler { return s.sampler }

func (s *requestSampler) close() {
	s.sampler.close()
	s.w.close()
}

// busyConns says how many open connections received data within d: at the end of a drain that
// counted new connections only, requests that still came (a proxy that pools connections).
func (s *requestSampler) busyConns(d time.Duration) (int, bool) {
	_, busy, err := s.w.poll(s.now(), d)
	return busy, err == nil
}
