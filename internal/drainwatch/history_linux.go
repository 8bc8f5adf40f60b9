package drainwatch

import (
	"os"
	"slices"
	"time"

	"github.com/drainit/drainit/internal/config"
)

// historyRescanEvery is the least time between two looks for the app's listeners in /proc (each
// reads the file descriptors of the app's processes: milliseconds for a large app): the
// namespace's listening sockets, read at every sample, say when one is due.
const historyRescanEvery = time.Second

// systemAppCounter is the appCounter of drainit's network namespace, which is the app's; nil
// when sock_diag is unavailable (the History then holds the counter alone).
func systemAppCounter(rc RecordConfig) appCounter {
	diag, err := openDiag()
	if err != nil {
		return nil
	}
	return &diagAppCounter{diag: diag, cfg: Config{AppPID: rc.AppPID, Adopter: rc.Adopter, Ports: rc.Ports},
		o: systemOptions{proc: procRoot, self: os.Getpid()}}
}

// diagAppCounter counts the new connections to the app's listeners with sock_diag, as the
// sock-diag method does, while other listeners share the namespace.
type diagAppCounter struct {
	diag      *diagConn
	cfg       Config
	o         systemOptions
	listeners []uint64 // the namespace's listening sockets' inodes at the last look, sorted
	scanned   time.Time
	shared    bool
	s         *diagSampler // the app's listeners' (over diag); nil: none yet
}

func (c *diagAppCounter) count() (int, []config.Endpoint, bool) {
	all, err := listeningSockets(c.diag, c.o.proc)
	if err != nil {
		c.shared = false
		return 0, nil, false
	}
	inodes := make([]uint64, len(all))
	for i, l := range all {
		inodes[i] = l.inode
	}
	slices.Sort(inodes)
	if !slices.Equal(inodes, c.listeners) && time.Since(c.scanned) >= historyRescanEvery {
		c.listeners, c.scanned = inodes, time.Now()
		c.look(all)
	}
	if !c.shared {
		return 0, nil, false
	}
	n, err := c.s.sample()
	if err != nil {
		c.shared, c.s = false, nil
		return 0, nil, false
	}
	return n, c.s.endpoints, true
}

// look finds the app's listeners among all, as a drain would, and whether others share the
// namespace. Where the drain could not watch the app (an UnwatchableError, no listener yet),
// there is nothing to count.
func (c *diagAppCounter) look(all []listener) {
	c.shared = false
	watched, setup, err := watchedListeners(c.cfg, c.o, all)
	if err != nil {
		return
	}
	if !slices.ContainsFunc(setup.Unwatched, func(l Listener) bool { return l.Why != whyOwn }) {
		return // the PassiveOpens counter is the app's: nothing to count here
	}
	eps, v4, v6 := watchedEndpoints(watched)
	c.shared = true
	if c.s == nil || !slices.Equal(eps, c.s.endpoints) {
		c.s = newDiagSampler(c.diag, eps, v4, v6)
	}
}

func (c *diagAppCounter) close() { c.diag.close() }
