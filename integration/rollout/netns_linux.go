package rollout

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A pod's network namespace. A pod on a node has one of its own, so drainit counts new
// connections with the namespace's PassiveOpens counter (drainwatch's passive-opens method:
// exact, ~0.05 ms a poll), and its TCP table holds its own sockets only. The harness makes one
// per pod (Config.HostNetwork false) without veth pairs or routes: the balancer creates its
// sockets to the pod inside the pod's namespace (a socket belongs to the namespace it was
// created in, whatever thread uses it later), so the pod's side of the traffic, its TIME_WAITs
// included, stays in the pod's namespace, as under DNAT.

// hostNetns is the harness's own network namespace, to return to after dialing into a pod's.
var hostNetns = sync.OnceValues(func() (int, error) {
	// Any thread not locked by dial is in the host's namespace.
	fd, err := unix.Open("/proc/self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("the harness's network namespace: %w", err)
	}
	return fd, nil
})

// netns is a pod's network namespace, held open by fd.
type netns struct {
	fd int
}

// startInNetns makes a network namespace with its loopback up and runs start in it: start's
// child processes (the pod's PID 1) are created there. The pod's launcher kills the pod when the
// thread that started it dies (PR_SET_PDEATHSIG), so that thread is kept, locked in the
// namespace, until the pod has exited (the channel start returns is closed); then it ends
// with its goroutine.
func startInNetns[T any](start func() (T, <-chan struct{}, error)) (T, *netns, error) {
	if _, err := hostNetns(); err != nil {
		var zero T
		return zero, nil, err
	}
	type result struct {
		v   T
		ns  *netns
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		var r result
		var exited <-chan struct{}
		func() {
			if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
				r.err = fmt.Errorf("a network namespace for the pod: unshare: %w", err)
				return
			}
			if err := loopbackUp(); err != nil {
				r.err = err
				return
			}
			fd, err := unix.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()), unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				r.err = fmt.Errorf("the pod's network namespace: %w", err)
				return
			}
			r.ns = &netns{fd: fd}
			if r.v, exited, r.err = start(); r.err != nil {
				r.ns.close()
				r.ns = nil
			}
		}()
		ch <- r
		if r.err == nil {
			<-exited
		}
	}()
	r := <-ch
	return r.v, r.ns, r.err
}

// loopbackUp sets lo up in the calling thread's network namespace (a new one has it down).
func loopbackUp() error {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback up: %w", err)
	}
	defer unix.Close(s)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("loopback up: %w", err)
	}
	if err := unix.IoctlIfreq(s, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback up: SIOCGIFFLAGS: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(s, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback up: SIOCSIFFLAGS: %w", err)
	}
	return nil
}

// dial connects to addr from inside the namespace: the socket is created there, on a thread
// that enters the namespace for the call and returns to the host's after. A nil n is the
// harness's own namespace.
func (n *netns) dial(addr string, timeout time.Duration) (net.Conn, error) {
	if n == nil {
		return net.DialTimeout("tcp", addr, timeout)
	}
	host, err := hostNetns()
	if err != nil {
		return nil, err
	}
	runtime.LockOSThread()
	if err := unix.Setns(n.fd, unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("entering the pod's network namespace: %w", err)
	}
	c, err := net.DialTimeout("tcp", addr, timeout)
	if rerr := unix.Setns(host, unix.CLONE_NEWNET); rerr != nil {
		// The thread stays locked, so it ends with this goroutine instead of serving others
		// from the wrong namespace.
		if c != nil {
			c.Close()
		}
		return nil, errors.Join(err, fmt.Errorf("back to the harness's network namespace: %w", rerr))
	}
	runtime.UnlockOSThread()
	return c, err
}

func (n *netns) close() {
	if n != nil && n.fd >= 0 {
		unix.Close(n.fd)
		n.fd = -1
	}
}

// netnsAvailable says why the harness cannot give pods network namespaces of their own here.
var netnsAvailable = sync.OnceValue(func() error {
	_, ns, err := startInNetns(func() (struct{}, <-chan struct{}, error) {
		done := make(chan struct{})
		close(done)
		return struct{}{}, done, nil
	})
	ns.close()
	return err
})
