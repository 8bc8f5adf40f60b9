package drainwatch

import "github.com/drainit/drainit/internal/config"

// detector counts new connections to a set of listening endpoints across successive snapshots
// of the TCP table. It is pure: the caller feeds it each snapshot (begin, add for every socket,
// end), and tests feed it made-up tables.
//
// A connection is keyed by its 4-tuple. It is new when its 4-tuple was not in the previous
// snapshot, in any state but LISTEN, CLOSE and SYN_SENT (the closing states and TIME_WAIT too:
// connections that arrived and began to close between two snapshots). One in SYN_RECV is kept
// but counted only once a later snapshot finds it past the handshake: a SYN costs a sender
// nothing, not even its address, and counting them would let anyone hold a drain to its maximum.
// A 4-tuple that was there before is new when a client reused it: its state went backwards
// (TIME_WAIT to ESTABLISHED), or it is held under another inode. A connection only closing is
// never new: its state only moves forward and its inode only goes from the process's to 0 after
// close(). What it cannot see, a connection that came and went between two snapshots, is in
// docs/adaptive-drain.md, "Methods".
type detector struct {
	listeners []config.Endpoint
	conns     map[connKey]connInfo
	gen       uint32
	primed    bool
	n         int
}

// connKey is a connection's 4-tuple, addresses in their 16-byte form (IPv4 v4-mapped): plain
// bytes keep the map cheap to hash and free of pointers.
type connKey struct {
	local, remote [16]byte
	lport, rport  uint16
}

type connInfo struct {
	inode uint64
	state State
	gen   uint32 // the snapshot this connection was last seen in
	// counted: the connection has been counted, or was there at the baseline.
	counted bool
}

func newDetector(listeners []config.Endpoint) *detector {
	return &detector{listeners: listeners, conns: map[connKey]connInfo{}}
}

// begin starts a snapshot.
func (d *detector) begin() {
	d.gen++
	d.n = 0
}

// add records one socket of the snapshot under way.
func (d *detector) add(s *Socket) {
	switch s.State {
	case Listen, Close, SynSent:
		// Not an incoming connection: a listener, an unconnected socket, or an outgoing connect
		// that happens to use the port.
		return
	}
	if !toAny(d.listeners, s) {
		return
	}
	k := connKey{local: s.Local.Addr().As16(), remote: s.Remote.Addr().As16(), lport: s.Local.Port(), rport: s.Remote.Port()}
	old, seen := d.conns[k]
	if seen && old.gen == d.gen {
		return // listed twice in one snapshot
	}
	counted := !d.primed || seen && old.counted && !reused(old, s)
	if !counted && stage(s.State) > stage(SynRecv) {
		d.n++
		counted = true
	}
	d.conns[k] = connInfo{inode: s.Inode, state: s.State, gen: d.gen, counted: counted}
}

// end finishes the snapshot and returns how many new connections it held. The first snapshot
// is the baseline: what is there already is not new.
func (d *detector) end() int {
	for k, c := range d.conns {
		if c.gen != d.gen {
			delete(d.conns, k) // gone: a 4-tuple seen again later is a new connection
		}
	}
	d.primed = true
	return d.n
}

// observe is begin, add for each socket, end.
func (d *detector) observe(snapshot []Socket) int {
	d.begin()
	for i := range snapshot {
		d.add(&snapshot[i])
	}
	return d.end()
}

// wants tells the table parser whether a line can matter, from its local port and state alone.
func (d *detector) wants(port uint16, st State) bool {
	switch st {
	case Listen, Close, SynSent:
		return false
	}
	for _, l := range d.listeners {
		if l.Port == port {
			return true
		}
	}
	return false
}

// toAny says whether s is a connection to one of the listening endpoints eps (by its local end).
func toAny(eps []config.Endpoint, s *Socket) bool {
	addr, port := s.Local.Addr(), s.Local.Port()
	for _, l := range eps {
		if l.Matches(addr, port) {
			return true
		}
	}
	return false
}

// reused reports whether a 4-tuple seen before now holds another connection.
func reused(old connInfo, s *Socket) bool {
	switch {
	case stage(s.State) < stage(old.state):
		return true // a connection's state never goes backwards
	case old.inode != 0 && s.Inode != 0 && old.inode != s.Inode:
		return true
	case old.inode != 0 && s.Inode == 0 && stage(s.State) <= stage(Established):
		// The inode drops to 0 when the process closes the socket, which moves it to a closing
		// state; an open connection without one is a new one not accept()ed yet.
		return true
	}
	return false
}

// stage orders the states one incoming connection goes through: SYN_RECV, ESTABLISHED, then
// either the active close (FIN_WAIT1, FIN_WAIT2 or CLOSING, TIME_WAIT) or the passive one
// (CLOSE_WAIT, LAST_ACK).
func stage(s State) int {
	switch s {
	case SynRecv, NewSynRecv:
		return 1
	case Established:
		return 2
	case FinWait1, CloseWait:
		return 3
	case FinWait2, Closing, LastAck:
		return 4
	case TimeWait:
		return 5
	}
	return 0
}
