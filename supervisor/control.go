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
	reply     chan control.Status
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
	r.reply = make(chan control.Status, 1)
	select {
	case s.reqs <- r:
	case <-ctx.Done():
		return control.Status{}, ctx.Err()
	case <-s.done:
		return control.Status{}, errExiting
	}
	select {
	case st := <-r.reply:
		return st, nil
	case <-ctx.Done():
		return control.Status{}, ctx.Err()
	case <-s.done:
		return control.Status{}, errExiting
	}
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

// status is the machine's state now, as the control server reports it: each timeline mark since
// t0 (since the app's start before a trigger).
func (m *machine) status(now time.Time, pid int) control.Status {
	st := control.Status{
		Phase: m.phase.String(), AppPID: pid, Uptime: now.Sub(m.start).Seconds(),
		Running: !m.appExited, Ready: m.ready, Draining: !m.t0.IsZero(), Drained: m.drained,
		Timeline: make([]control.Mark, 0, len(m.timeline)),
	}
	for _, mk := range m.timeline {
		st.Timeline = append(st.Timeline, control.Mark{What: mk.what, Elapsed: mk.at.Sub(m.base()).Seconds()})
	}
	return st
}
