package integration

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestAdaptiveDrainUDPIsFixed: an app that serves UDP beside TCP (a DNS server's 53/udp and
// 53/tcp, an HTTP/3 server's QUIC beside its TCP port), and a load balancer that routes
// datagrams to it, 50 a second, until 2.5 s into the drain: within --drain-delay (3 s). The
// adaptive drain counts new TCP connections and cannot see datagrams, so with no TCP traffic it
// used to end after --drain-quiet (1 s), and the app's stop lost every datagram after it (75 of
// the 131 sent). drainit now says the app serves UDP and drains for --drain-delay, and every
// datagram is answered. In the pod's own network namespace (passive-opens before) and in a
// shared one (sock-diag before).
func TestAdaptiveDrainUDPIsFixed(t *testing.T) {
	requireRoot(t)
	const quiet, delay, drainMax = time.Second, 3 * time.Second, 10 * time.Second
	const every = 20 * time.Millisecond         // 50 datagrams a second
	const routed = delay - 500*time.Millisecond // how long into the drain datagrams still come
	for _, own := range []bool{true, false} {
		name := "shared-netns"
		if own {
			name = "own-netns"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := spec{mode: pid1, args: []string{"--drain", "adaptive", "--drain-quiet", quiet.String(),
				"--drain-delay", delay.String(), "--drain-max", drainMax.String(), "--grace-period", "30s",
				"--log-format", "json"}}
			udpAddr, tcpAddr := "0.0.0.0:53", "0.0.0.0:8080"
			if own {
				s.launcher = []string{testappBin, "_netns", "--"}
			} else {
				// The host's namespace: a free port the kernel would not pick itself, or the app's
				// socket would pass for a client's.
				udpAddr, tcpAddr = "0.0.0.0:"+strconv.Itoa(freeServerPort(t)), "127.0.0.1:0"
			}
			s.app = app("serve-udp", "-addr", tcpAddr, "-udp", udpAddr)
			d := start(t, s)
			d.stdout.AwaitContains(t, waitTimeout, "ready app")
			port := udpAddr[strings.LastIndexByte(udpAddr, ':')+1:]

			netns := ""
			if own {
				netns = fmt.Sprintf("/proc/%d/ns/net", d.pid)
			}
			c := newUDPClient(t, netns, "127.0.0.1:"+port, every)
			waitUntil(t, waitTimeout, "the app answers datagrams", func() bool { return c.answered() > 5 })
			d.signal(syscall.SIGTERM)
			c.sendUntil(time.Now().Add(routed))
			if st := d.wait(waitTimeout); st.code != 0 || st.sig != 0 {
				t.Fatalf("drainit: %v, want exit 0\n%s", st, d.dump())
			}
			c.stop(waitTimeout)

			var warned, stopped bool
			var stopAt time.Time
			for _, e := range d.logs() {
				switch e.msg() {
				case "adaptive drain over":
					t.Errorf("the adaptive drain ended by itself (%s after %v ms), blind to the UDP traffic\n%s",
						e.str("reason"), e["elapsed"], d.dump())
				case unwatchableWarning:
					warned = true
					udp := fmt.Sprint(e["unwatchable"])
					if !strings.Contains(udp, "]:"+port) && !strings.Contains(udp, "0.0.0.0:"+port) {
						t.Errorf("the warning names the UDP endpoints %s, want the app's port %s", udp, port)
					}
				case "stop signal sent":
					stopped = true
					el, _ := e.int("elapsed")
					elapsed := time.Duration(el) * time.Millisecond
					if elapsed < delay-50*time.Millisecond || elapsed > delay+time.Second {
						t.Errorf("stop signal sent %s after the trigger, want --drain-delay %s (not --drain-quiet %s)\n%s",
							elapsed, delay, quiet, d.dump())
					}
					var err error
					if stopAt, err = e.time(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if !warned {
				t.Errorf("no warning that the app serves UDP\n%s", d.dump())
			}
			if !stopped {
				t.Fatalf("no stop signal sent\n%s", d.dump())
			}
			sent, lost, after := c.count(stopAt)
			t.Logf("%d datagrams sent, %d lost, %d after the stop signal", sent, lost, after)
			if lost > 0 {
				t.Errorf("%d of %d datagrams were lost (%d sent after the stop signal), want none: the balancer stopped routing %s into the drain",
					lost, sent, after, routed)
			}
			if want := int(routed/every) / 2; sent < want {
				t.Errorf("the client sent %d datagrams, want %d at least", sent, want)
			}
		})
	}
}

// unwatchableWarning is drainit's warning when the app listens where the adaptive drain cannot
// see (UDP, a UNIX socket).
const unwatchableWarning = "the adaptive drain cannot watch all the app's listeners: falling back to the fixed drain delay; --drain-ports names the TCP ports traffic is routed to"

// TestAdaptiveDrainUNIXSocketIsFixed: an app that serves HTTP on a UNIX socket (as behind a
// sidecar proxy that reaches it through a shared volume) beside an idle TCP port (its metrics,
// say), and a client of the socket that keeps coming until 2.5 s into the drain: within
// --drain-delay (3 s). The adaptive drain used to watch the idle TCP port alone and end quiet
// after --drain-quiet (1 s), and the app's stop refused every request after it. drainit now names
// the socket, drains for --drain-delay, and every request is answered.
func TestAdaptiveDrainUNIXSocketIsFixed(t *testing.T) {
	requireRoot(t)
	const quiet, delay, drainMax = time.Second, 3 * time.Second, 10 * time.Second
	const routed = delay - 500*time.Millisecond
	sock := filepath.Join(t.TempDir(), "app.sock")
	d := start(t, spec{mode: pid1, args: []string{"--drain", "adaptive", "--drain-quiet", quiet.String(),
		"--drain-delay", delay.String(), "--drain-max", drainMax.String(), "--grace-period", "30s", "--log-format", "json"},
		app: app("serve", "-addr", "127.0.0.1:0", "-unix", sock, "-graceful")})
	d.stdout.AwaitContains(t, waitTimeout, "ready app")
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}}}
	get := func() error {
		resp, err := client.Get("http://app/")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if _, err := io.ReadAll(resp.Body); err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %s", resp.Status)
		}
		return nil
	}
	waitUntil(t, waitTimeout, "the app answers on its UNIX socket", func() bool { return get() == nil })
	d.signal(syscall.SIGTERM)
	var sent, failed int
	for end := time.Now().Add(routed); time.Now().Before(end); {
		sent++
		if err := get(); err != nil {
			failed++
			t.Logf("request %d: %v", sent, err)
		}
		time.Sleep(20 * time.Millisecond) // the client's pace, 50 a second: not a synchronisation
	}
	if st := d.wait(waitTimeout); st.code != 0 || st.sig != 0 {
		t.Fatalf("drainit: %v, want exit 0\n%s", st, d.dump())
	}
	var warned, stopped bool
	for _, e := range d.logs() {
		switch e.msg() {
		case "adaptive drain over":
			t.Errorf("the adaptive drain ended by itself (%s after %v ms), blind to the UNIX socket\n%s", e.str("reason"), e["elapsed"], d.dump())
		case unwatchableWarning:
			warned = true
			if got := fmt.Sprint(e["unwatchable"]); !strings.Contains(got, sock) {
				t.Errorf("the warning names %s, want the socket %s", got, sock)
			}
		case "stop signal sent":
			stopped = true
			if el, _ := e.int("elapsed"); time.Duration(el)*time.Millisecond < delay-50*time.Millisecond {
				t.Errorf("stop signal sent %d ms after the trigger, want --drain-delay %s\n%s", el, delay, d.dump())
			}
		}
	}
	if !warned || !stopped {
		t.Errorf("warned %v, stop signal sent %v: want both\n%s", warned, stopped, d.dump())
	}
	if failed > 0 || sent < int(routed/(20*time.Millisecond))/2 {
		t.Errorf("%d of %d requests failed, want none of at least %d", failed, sent, int(routed/(20*time.Millisecond))/2)
	}
}

// freeServerPort is a UDP port free on the host's 0.0.0.0, outside the ephemeral range.
func freeServerPort(t *testing.T) int {
	t.Helper()
	lo, hi := 32768, 60999
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		_, _ = fmt.Sscan(string(b), &lo, &hi)
	}
	for p := 20000 + os.Getpid()%5000; p < 65536; p += 7 {
		if p >= lo && p <= hi {
			continue
		}
		if c, err := net.ListenPacket("udp", "0.0.0.0:"+strconv.Itoa(p)); err == nil {
			c.Close()
			return p
		}
	}
	t.Fatal("no free UDP port outside the ephemeral range")
	return 0
}

// udpClient sends numbered datagrams to a serve-udp app steadily, from one unconnected socket
// (a stopped app's ICMP port unreachable would fail a connected one's sends), and records when
// each was sent and whether it was answered.
type udpClient struct {
	pc    net.PacketConn
	mu    sync.Mutex
	sent  []time.Time // by number
	ans   map[uint64]bool
	until time.Time // when sending ends (zero: at stop)
	done  chan struct{}
	sends chan struct{} // closed when the sending has ended
	wg    sync.WaitGroup
}

// newUDPClient starts a client sending to addr every interval; its socket is made in the network
// namespace at netns ("": this process's), to which it then belongs whatever thread uses it.
func newUDPClient(t *testing.T, netns, addr string, interval time.Duration) *udpClient {
	t.Helper()
	to, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := listenUDPIn(netns)
	if err != nil {
		t.Fatal(err)
	}
	c := &udpClient{pc: pc, ans: map[uint64]bool{}, done: make(chan struct{}), sends: make(chan struct{})}
	t.Cleanup(func() { c.stop(waitTimeout) })
	c.wg.Add(2)
	go func() {
		defer c.wg.Done()
		buf := make([]byte, 64)
		for {
			n, _, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if n == 8 {
				c.mu.Lock()
				c.ans[binary.BigEndian.Uint64(buf)] = true
				c.mu.Unlock()
			}
		}
	}()
	go func() {
		defer c.wg.Done()
		defer close(c.sends)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			c.mu.Lock()
			if !c.until.IsZero() && time.Now().After(c.until) {
				c.mu.Unlock()
				return
			}
			var b [8]byte
			binary.BigEndian.PutUint64(b[:], uint64(len(c.sent)))
			c.sent = append(c.sent, time.Now())
			c.mu.Unlock()
			_, _ = pc.WriteTo(b[:], to) // refused once the app is gone: lost, as the rest
			select {
			case <-c.done:
				return
			case <-tick.C:
			}
		}
	}()
	return c
}

func listenUDPIn(netns string) (net.PacketConn, error) {
	if netns == "" {
		return net.ListenPacket("udp", "0.0.0.0:0")
	}
	errc := make(chan error, 1)
	var pc net.PacketConn
	go func() {
		// The thread enters the namespace and is never unlocked: it ends with this goroutine
		// rather than run others in the wrong namespace.
		runtime.LockOSThread()
		fd, err := unix.Open(netns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- err
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("entering %s: %w", netns, err)
			return
		}
		pc, err = net.ListenPacket("udp", "0.0.0.0:0")
		errc <- err
	}()
	return pc, <-errc
}

func (c *udpClient) answered() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ans)
}

// sendUntil ends the sending at t: the balancer no longer routes to the app.
func (c *udpClient) sendUntil(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.until = t
}

// stop waits up to timeout for the sending to end (at once if sendUntil was not called), gives
// the last answers 200 ms to come, and closes the socket.
func (c *udpClient) stop(timeout time.Duration) {
	select {
	case <-c.done:
		return
	default:
	}
	select {
	case <-c.sends:
	case <-time.After(timeout):
	}
	close(c.done)
	_ = c.pc.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	c.wg.Wait()
	c.pc.Close()
}

// count says how many datagrams were sent, how many of them went unanswered, and how many were
// sent after t.
func (c *udpClient) count(t time.Time) (sent, lost, after int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, at := range c.sent {
		sent++
		if !c.ans[uint64(i)] {
			lost++
		}
		if at.After(t) {
			after++
		}
	}
	return sent, lost, after
}
