package drainwatch

import (
	"time"

	"golang.org/x/sys/unix"
)

// requestWatch reads the app's open incoming connections, with what each has received, through
// a sock_diag socket of its own that asks for every socket's tcp_info: requests that come over
// connections already open, which no count of new connections sees (see "Requests on open
// connections" in the package doc).
type requestWatch struct {
	diag   *diagConn
	filter []byte // the watched listeners' local ends (endpointFilter)
	v4, v6 bool
	// received is each connection's tcpi_bytes_received at the last poll, by cookie; next is
	// the one being filled, swapped in at the end of a poll.
	received, next map[uint64]uint64
	busy           int // connections whose data came within `within` (poll's argument)
	within         time.Duration
	visit          func(*Socket) // bound once: not a closure per poll
	active         int           // connections that received data since the last poll
}

// newRequestWatch opens the watch on the connections to endpoints, in the IPv4 table, the IPv6
// one, or both; nil when sock_diag is unavailable.
func newRequestWatch(endpoints []Endpoint, v4, v6 bool) *requestWatch {
	diag, err := openDiag()
	if err != nil {
		return nil
	}
	diag.info = true
	w := &requestWatch{diag: diag, filter: endpointFilter(endpoints), v4: v4, v6: v6,
		received: map[uint64]uint64{}, next: map[uint64]uint64{}}
	w.visit = w.add
	return w
}

func (w *requestWatch) add(s *Socket) {
	if !s.Info.OK {
		return
	}
	if prev, ok := w.received[s.Cookie]; ok && s.Info.BytesReceived > prev {
		w.active++
	}
	w.next[s.Cookie] = s.Info.BytesReceived
	if s.Info.LastDataRecv < w.within {
		w.busy++
	}
}

// poll reads the open connections once and returns how many received data since the previous
// poll (the first poll, a baseline, returns 0) and how many received data within the last
// within. A connection opened since the previous poll counts in neither the first number nor
// here at all but as a new connection, which the sampler beside counts.
func (w *requestWatch) poll(within time.Duration) (active, busy int, err error) {
	w.active, w.busy, w.within = 0, 0, within
	clear(w.next)
	for _, t := range []struct {
		on     bool
		family uint8
	}{{w.v4, unix.AF_INET}, {w.v6, unix.AF_INET6}} {
		if t.on {
			if err := w.diag.dump(t.family, 1<<Established, w.filter, w.visit); err != nil {
				return 0, 0, err
			}
		}
	}
	w.received, w.next = w.next, w.received
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
	w      *requestWatch
	count  bool
	counts int // the open connections' counts sample has added, in all
}

func (s *requestSampler) sample() (int, error) {
	n, err := s.sampler.sample()
	if err != nil || !s.count {
		return n, err
	}
	active, _, err := s.w.poll(0)
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
	_, busy, err := s.w.poll(d)
	return busy, err == nil
}
