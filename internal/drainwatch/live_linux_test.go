package drainwatch

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/integration/testenv"

	"github.com/drainit/drainit/internal/config"
)

// The live tests run the watch on this machine's TCP table, with real loopback connections to a
// real child process: the test binary run again as a helper (DRAINWATCH_HELPER).
func TestMain(m *testing.M) {
	switch os.Getenv("DRAINWATCH_HELPER") {
	case "listen":
		helperListen()
		return
	case "idle":
		_, _ = io.Copy(io.Discard, os.Stdin)
		return
	case "netns":
		os.Exit(helperNetns())
	}
	os.Exit(m.Run())
}

// helperListen listens on 127.0.0.1 and ::1 (when there is IPv6), prints "ports P4 P6" (P6 0
// without IPv6), and accepts and keeps every connection, never closing one, until its stdin
// closes.
func helperListen() {
	var ports [2]int
	held := make(chan net.Conn, 1000) // a connection nobody references is closed by its finalizer
	for i, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		ports[i] = ln.Addr().(*net.TCPAddr).Port
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				held <- c
			}
		}()
	}
	fmt.Printf("ports %d %d\n", ports[0], ports[1])
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// child starts the test binary as a helper and returns its pid and first output line.
func child(t *testing.T, mode string) (int, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DRAINWATCH_HELPER="+mode)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	if mode != "listen" {
		return cmd.Process.Pid, ""
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	return cmd.Process.Pid, strings.TrimSpace(line)
}

// startLive starts a watch like Start does, with the method forced, and returns once the
// baseline is taken: connections made after that are new.
func startLive(t *testing.T, cfg Config, method Method) <-chan Result {
	t.Helper()
	cfg = cfg.withDefaults()
	e := systemEnv(cfg)
	e.open = func(cfg Config) (sampler, Setup, error) {
		return openSystem(cfg, systemOptions{proc: procRoot, self: os.Getpid(), force: method})
	}
	based := afterBaseline(&e)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch := start(ctx, cfg, e)
	select {
	case <-based:
	case <-time.After(10 * time.Second):
		t.Fatal("no baseline after 10s")
	}
	return ch
}

// afterBaseline returns a channel closed once the watch has taken its baseline: the second
// thing it measures, after finding what to watch.
func afterBaseline(e *env) <-chan struct{} {
	based := make(chan struct{})
	var calls atomic.Int32
	measure := e.measure
	e.measure = func(f func()) time.Duration {
		defer func() {
			if calls.Add(1) == 2 {
				close(based)
			}
		}()
		return measure(f)
	}
	return based
}

func waitResult(t *testing.T, ch <-chan Result) (Result, time.Time) {
	t.Helper()
	select {
	case r, ok := <-ch:
		if !ok {
			t.Fatal("the channel closed without a result")
		}
		return r, time.Now()
	case <-time.After(30 * time.Second):
		t.Fatal("no result after 30s")
	}
	return Result{}, time.Time{}
}

func dial(t *testing.T, addr string, keep bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if keep {
		t.Cleanup(func() { c.Close() })
	} else {
		c.Close() // the client closes first: the app's end waits in CLOSE_WAIT (the helper never closes)
	}
}

func TestLiveTableMethods(t *testing.T) {
	// Another app on the same port at another address, as the rollout harness's pods are: its
	// connections are not the app's. The helper's port may be taken on 127.0.0.2 (as a client's
	// local port, by tests running beside this one): then another helper, another port.
	var (
		pid, p4, p6 int
		other       net.Listener
	)
	for try := 1; other == nil; try++ {
		var line string
		pid, line = child(t, "listen")
		if _, err := fmt.Sscanf(line, "ports %d %d", &p4, &p6); err != nil || p4 == 0 {
			t.Fatalf("helper said %q", line)
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.2:%d", p4))
		switch {
		case err == nil:
			other = ln
		case !errors.Is(err, unix.EADDRINUSE) || try == 5:
			t.Fatalf("a second listener on port %d: %v", p4, err)
		}
	}
	defer other.Close()
	v4 := fmt.Sprintf("127.0.0.1:%d", p4)
	v6 := fmt.Sprintf("[::1]:%d", p6)
	go func() {
		for {
			c, err := other.Accept()
			if err != nil {
				return
			}
			defer c.Close() // kept open until the listener closes
		}
	}()
	for _, method := range []Method{MethodSockDiag, MethodProcNet} {
		t.Run(string(method), func(t *testing.T) {
			if method == MethodSockDiag {
				if d, err := openDiag(); err != nil {
					testenv.SkipUnlessCI(t, fmt.Sprintf("no netlink sock_diag here: %v", err))
				} else {
					d.close()
				}
			}
			cfg := Config{AppPID: pid, Quiet: 300 * time.Millisecond, Max: 20 * time.Second, Interval: 20 * time.Millisecond}
			ch := startLive(t, cfg, method)
			dial(t, other.Addr().String(), true)
			want := 0
			for i := range 3 {
				dial(t, v4, i != 1)
				want++
			}
			if p6 != 0 {
				dial(t, v6, true)
				dial(t, v6, false)
				want += 2
			}
			last := time.Now()
			r, end := waitResult(t, ch)
			if r.Reason != ReasonQuiet || r.Method != method || r.NewConns != want {
				t.Fatalf("result %+v, want quiet after %d new connections by %s", r, want, method)
			}
			if end.Sub(last) < cfg.Quiet {
				t.Errorf("ended %s after the last connection, before the quiet period %s", end.Sub(last), cfg.Quiet)
			}
			wantWatched := []string{v4}
			if p6 != 0 {
				wantWatched = append(wantWatched, v6)
			}
			var got []string
			for _, e := range r.Watched {
				got = append(got, e.String())
			}
			slices.Sort(got)
			slices.Sort(wantWatched)
			if !slices.Equal(got, wantWatched) {
				t.Errorf("watched %v, want %v", got, wantWatched)
			}
		})
	}
}

// TestLivePorts: with --drain-ports, only the endpoints given are watched.
func TestLivePorts(t *testing.T) {
	pid, line := child(t, "listen")
	var p4, p6 int
	if _, err := fmt.Sscanf(line, "ports %d %d", &p4, &p6); err != nil || p4 == 0 || p6 == 0 {
		testenv.SkipUnlessCI(t, fmt.Sprintf("needs IPv4 and IPv6 loopback; helper said %q", line))
	}
	cfg := Config{AppPID: pid, Ports: []config.Endpoint{{Port: uint16(p6)}}, Quiet: 300 * time.Millisecond, Interval: 20 * time.Millisecond}
	ch := startLive(t, cfg, "")
	dial(t, fmt.Sprintf("127.0.0.1:%d", p4), true)
	dial(t, fmt.Sprintf("[::1]:%d", p6), true)
	r, _ := waitResult(t, ch)
	if r.Reason != ReasonQuiet || r.NewConns != 1 || len(r.Watched) != 1 || r.Watched[0] != (config.Endpoint{Addr: netip.IPv6Loopback(), Port: uint16(p6)}) {
		t.Fatalf("result %+v, want quiet after the one connection to [::1]:%d", r, p6)
	}
}

func TestLiveUnavailable(t *testing.T) {
	pid, _ := child(t, "idle")
	r, _ := waitResult(t, Start(context.Background(), Config{AppPID: pid}))
	if r.Reason != ReasonUnavailable || r.Err == nil || !strings.Contains(r.Err.Error(), "no listening TCP socket in the app's process tree") {
		t.Errorf("an app without a listener: %+v", r)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	ln.Close() // a port nobody listens on now
	r, _ = waitResult(t, Start(context.Background(), Config{Ports: []config.Endpoint{{Port: port}}}))
	if r.Reason != ReasonUnavailable || r.Err == nil || !strings.Contains(r.Err.Error(), fmt.Sprintf("drain ports %d", port)) {
		t.Errorf("a port nobody listens on: %+v", r)
	}
}

// TestLivePassiveOpens runs in a network namespace of its own, where the helper is the only
// listener: the counter method applies, and it counts connections that open and close between
// two polls, which the table methods can miss.
func TestLivePassiveOpens(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DRAINWATCH_HELPER=netns")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if errors.Is(err, syscall.EPERM) || (err != nil && os.Geteuid() != 0) {
		testenv.SkipUnlessCI(t, fmt.Sprintf("needs a network namespace (root): %v", err))
	}
	if err != nil {
		t.Fatalf("helper in its own network namespace: %v\n%s", err, out)
	}
	var got struct {
		Result Result
		Conns  int
		Err    string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("helper said %q: %v", out, err)
	}
	if got.Err != "" {
		t.Fatal(got.Err)
	}
	r := got.Result
	if r.Reason != ReasonQuiet || r.Method != MethodPassiveOpens || r.NewConns != got.Conns {
		t.Fatalf("result %+v, want quiet after %d new connections by %s", r, got.Conns, MethodPassiveOpens)
	}
}

// helperNetns brings up loopback in the fresh network namespace, listens, starts a watch on
// itself, makes short-lived connections (each accepted and closed at once, within one poll
// interval) and prints the result as JSON.
func helperNetns() int {
	report := func(r Result, conns int, err error) int {
		v := struct {
			Result Result
			Conns  int
			Err    string
		}{Result: r, Conns: conns}
		if err != nil {
			v.Err = err.Error()
		}
		_ = json.NewEncoder(os.Stdout).Encode(v)
		return 0
	}
	if err := loopbackUp(); err != nil {
		return report(Result{}, 0, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return report(Result{}, 0, err)
	}
	cfg := Config{AppPID: os.Getpid(), Quiet: 300 * time.Millisecond, Interval: time.Second}.withDefaults()
	e := systemEnv(cfg)
	based := afterBaseline(&e)
	ch := start(context.Background(), cfg, e)
	<-based
	const n = 5
	for range n {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return report(Result{}, 0, err)
		}
		s, err := ln.Accept()
		if err != nil {
			return report(Result{}, 0, err)
		}
		c.Close()
		s.Close()
	}
	r, ok := <-ch
	if !ok {
		return report(Result{}, 0, errors.New("no result"))
	}
	return report(r, n, nil)
}

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// A listener the app's tree no longer holds, because the process that has it left the tree (a
// daemon reparented to drainit), is still the app's when drainit adopted it: here the test
// process stands for drainit and the listening helper, its own child, for the adopted daemon.
func TestLiveAdoptedListener(t *testing.T) {
	app, _ := child(t, "idle")
	_, ports := child(t, "listen")
	var p4, p6 int
	if _, err := fmt.Sscanf(ports, "ports %d %d", &p4, &p6); err != nil {
		t.Fatalf("helper said %q: %v", ports, err)
	}
	r, _ := waitResult(t, Start(context.Background(), Config{AppPID: app, Quiet: 300 * time.Millisecond}))
	if r.Reason != ReasonUnavailable {
		t.Fatalf("without the adopter: %+v, want unavailable (the app's own tree has no listener)", r)
	}
	ch := startLive(t, Config{AppPID: app, Adopter: os.Getpid(), Quiet: time.Second}, MethodSockDiag)
	dial(t, fmt.Sprintf("127.0.0.1:%d", p4), true)
	r, _ = waitResult(t, ch)
	if r.Reason != ReasonQuiet || r.NewConns != 1 || !slices.Contains(r.Watched, config.Endpoint{Addr: netip.AddrFrom4([4]byte{127, 0, 0, 1}), Port: uint16(p4)}) {
		t.Fatalf("with the adopter: %+v, want quiet after the one connection to 127.0.0.1:%d", r, p4)
	}
}

// The History in a namespace shared with another listener (a sidecar: a second helper, not the
// app's): it counts the app's own listeners' new connections, not the sidecar's, and a drain
// that watches the same listeners with sock-diag starts from them.
func TestLiveHistoryBesideASidecar(t *testing.T) {
	app, ports := child(t, "listen")
	_, sidecarPorts := child(t, "listen")
	var p4, p6, s4, s6 int
	if _, err := fmt.Sscanf(ports, "ports %d %d", &p4, &p6); err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Sscanf(sidecarPorts, "ports %d %d", &s4, &s6); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h := Record(ctx, RecordConfig{AppPID: app})
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.mu.Lock()
		found := len(h.own.endpoints) > 0
		h.mu.Unlock()
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the History found no listener of the app's to count in 10 s")
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, with the deadline above
	}
	const n = 30
	for range n {
		dial(t, fmt.Sprintf("127.0.0.1:%d", p4), true)
		dial(t, fmt.Sprintf("127.0.0.1:%d", s4), true) // the sidecar's traffic: not the app's
	}
	ch := Start(context.Background(), Config{AppPID: app, Auto: true, Max: 5 * time.Second, History: h})
	r, _ := waitResult(t, ch)
	if r.Method == MethodPassiveOpens {
		t.Fatalf("method %s with a second listener in the namespace", r.Method)
	}
	if !r.HistoryUsed || r.HistoryFrom != HistoryAppListeners || r.Auto == nil {
		t.Fatalf("result %+v, want the history of the app's listeners used", r)
	}
	// Every connection is held open, so every one is seen: the app's 30, not the sidecar's.
	if r.Auto.Arrivals > n {
		t.Errorf("the rate rests on %d arrivals, more than the app's %d: the sidecar's were counted (%v)", r.Auto.Arrivals, n, r.Auto)
	}
	if r.Auto.Arrivals < n-2 {
		t.Errorf("the rate rests on %d arrivals, want the app's %d (%v)", r.Auto.Arrivals, n, r.Auto)
	}
}
