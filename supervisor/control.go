package supervisor

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"time"

	"github.com/drainit/drainit/internal/control"
)

// request is a control-server call, answered by the loop on reply (buffered, so the loop never
// blocks on a caller that has gone away).
type request struct {
	prestop bool
	kubelet bool // a /prestop from the kubelet's preStop hook
	// connected says whether the /prestop's caller still waits on its connection (nil: unknown)
	connected func() bool
	reply     chan Snapshot
}

var errExiting = errors.New("drainit is exiting")

// Prestop implements control.Backend: it asks the loop to start (or join) the stop sequence and
// waits for the end of the drain. kubelet says the call is the kubelet's preStop hook, and
// connected whether its caller still waits (see control.Backend).
func (s *Supervisor) Prestop(ctx context.Context, kubelet bool, connected func() bool) (control.Status, error) {
	return s.ask(ctx, request{prestop: true, kubelet: kubelet, connected: connected})
}

// Status implements control.Backend.
func (s *Supervisor) Status(ctx context.Context) (control.Status, error) {
	return s.ask(ctx, request{})
}

func (s *Supervisor) ask(ctx context.Context, r request) (control.Status, error) {
	r.reply = make(chan Snapshot, 1)
	select {
	case s.reqs <- r:
	case <-ctx.Done():
		return control.Status{}, ctx.Err()
	case <-s.done:
		return control.Status{}, errExiting
	}
	select {
	case st := <-r.reply:
		return toStatus(st), nil
	case <-ctx.Done():
		return control.Status{}, ctx.Err()
	case <-s.done:
		return control.Status{}, errExiting
	}
}

// toStatus is a snapshot as the control server reports it.
func toStatus(sn Snapshot) control.Status {
	st := control.Status{
		Phase: sn.Phase.String(), AppPID: sn.AppPID, Uptime: sn.Uptime.Seconds(),
		Running: sn.Running, Ready: sn.Ready, Draining: sn.Draining, Drained: sn.Drained,
		Timeline: make([]control.Mark, 0, len(sn.Timeline)),
	}
	for _, mk := range sn.Timeline {
		st.Timeline = append(st.Timeline, control.Mark{What: mk.What, Elapsed: mk.Elapsed.Seconds()})
	}
	return st
}

// countingListener counts accepted connections, so that the adaptive drain can tell the
// control server's connections (the kubelet's /prestop) from the app's.
type countingListener struct {
	net.Listener
	n atomic.Uint64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// Snapshot is the supervisor's state as the control server reports it.
type Snapshot struct {
	Phase    Phase
	AppPID   int
	Uptime   time.Duration
	Running  bool // the app has not exited
	Ready    bool
	Draining bool // a trigger has been seen
	Drained  bool // the drain is over
	// Timeline is what happened so far, each since t0 (since the app's start before a trigger).
	Timeline []Mark
}

// Mark is one entry of a snapshot's timeline.
type Mark struct {
	What    string
	Elapsed time.Duration
}

// snapshot is the machine's state now.
func (m *machine) snapshot(now time.Time, pid int) Snapshot {
	st := Snapshot{
		Phase: m.phase, AppPID: pid, Uptime: now.Sub(m.start),
		Running: !m.appExited, Ready: m.ready, Draining: !m.t0.IsZero(), Drained: m.drained,
		Timeline: make([]Mark, 0, len(m.timeline)),
	}
	for _, mk := range m.timeline {
		st.Timeline = append(st.Timeline, Mark{What: mk.what, Elapsed: mk.at.Sub(m.base())})
	}
	return st
}
