package integration

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drainit/drainit/integration/slowclient"
	"github.com/drainit/drainit/integration/testenv"
)

// TestTinyFileLimit: with RLIMIT_NOFILE a few descriptors above what the Go runtime itself holds
// (stdin, stdout, stderr and two of its own on a cgroup v1 host), drainit either runs the app and
// exits with its status, or cannot fork it (exec's error pipe needs two descriptors) and exits
// 126 with one line that says so: never does the Go runtime abort it. The poller's epoll and
// eventfd, which the runtime opens with the first timer or pollable file and aborts without,
// must find room: before, the exit's wait for the log's last lines set a timer, and at limits of
// 5 and 6 drainit died with "fatal error: runtime: netpollinit failed" instead of the line.
func TestTinyFileLimit(t *testing.T) {
	prlimit, err := testenv.LookPath("prlimit")
	if err != nil {
		testenv.SkipUnlessCI(t, err.Error())
	}
	eachMode(t, func(t *testing.T, m mode) {
		t.Parallel()
		for n := 5; n <= 10; n++ {
			d := start(t, spec{mode: m, launcher: []string{prlimit, "--nofile=" + strconv.Itoa(n) + ":" + strconv.Itoa(n), "--"},
				args: []string{"--log-format", "json"}, app: app("exit", "3")})
			st := d.wait(waitTimeout)
			if strings.Contains(d.stderr.String(), "fatal error") {
				t.Fatalf("RLIMIT_NOFILE %d: the Go runtime aborted drainit\n%s", n, d.dump())
			}
			switch st {
			case exitStatus{code: 3}:
			case exitStatus{code: 126}:
				e := d.logs()
				if len(e) != 1 || e[0].msg() != "app not started" || !strings.Contains(e[0].str("error"), "too many open files") {
					t.Errorf("RLIMIT_NOFILE %d: exit 126 with %v, want one line saying too many files are open\n%s", n, e, d.dump())
				}
			default:
				t.Errorf("RLIMIT_NOFILE %d: drainit %v, want the app's exit 3 or 126\n%s", n, st, d.dump())
			}
		}
	})
}

// TestControlServerAtFileLimit: with RLIMIT_NOFILE 32, a client holding 300 slow connections to
// the control server (from 127.0.0.2) must neither lock the kubelet's probes out (from
// 127.0.0.1, each answered within its default 1 s timeout) nor take the descriptors the stop
// sequence's hooks need (the offline exec hook runs). The server holds as many connections as
// leave drainit 16 descriptors, and sheds as when full. Before, it took connections until accept
// failed with EMFILE; a full server's shedding, which makes room for a newcomer it has accepted,
// never came: no probe answered in 4 s, and the offline hook failed with "too many open files".
func TestControlServerAtFileLimit(t *testing.T) {
	prlimit, err := testenv.LookPath("prlimit")
	if err != nil {
		testenv.SkipUnlessCI(t, err.Error())
	}
	eachMode(t, func(t *testing.T, m mode) {
		t.Parallel()
		addr := testenv.FreeLoopbackAddr(t)
		d := start(t, spec{mode: m, launcher: []string{prlimit, "--nofile=32:32", "--"}, app: app("signals"),
			args: []string{"--log-format", "json", "--http-addr", addr, "--drain-delay", "100ms",
				"--offline-exec", `["` + testappBin + `","exit","0"]`}})
		d.stderr.AwaitContains(t, waitTimeout, "control server listening")
		d.stdout.AwaitPrefix(t, waitTimeout, "ready app")
		atk := slowclient.Start(slowclient.Config{Addr: addr, From: net.IPv4(127, 0, 0, 2), Conns: 300})
		defer atk.Stop()
		waitUntil(t, waitTimeout, "the slow client's 300 connections", func() bool { return atk.Dials() >= 300 })
		for i := range 5 {
			if err := probe(addr, time.Second); err != nil {
				t.Fatalf("probe %d: %v\n%s", i+1, err, d.dump())
			}
		}
		d.signal(syscall.SIGTERM)
		if st := d.wait(waitTimeout); st != (exitStatus{code: 0}) {
			t.Errorf("drainit: %v, want exit 0 (the app's status)\n%s", st, d.dump())
		}
		var summary string
		for _, e := range d.logs() {
			if e.msg() == "drainit exiting" {
				summary = e.str("summary")
			}
		}
		if !strings.Contains(summary, "offline hooks: 1 ok") {
			t.Errorf("summary %q: the offline hook did not run\n%s", summary, d.dump())
		}
	})
}

// probe asks GET /healthz of the control server at addr from 127.0.0.1, on a new connection, as
// the kubelet does, and fails unless the answer is 200 within timeout.
func probe(addr string, timeout time.Duration) error {
	dl := &net.Dialer{Timeout: timeout, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}}
	c, err := dl.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: drainit\r\nConnection: close\r\n\r\n"); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return fmt.Errorf("no answer within %s: %w", timeout, err)
	}
	if !strings.HasPrefix(line, "HTTP/1.1 200 ") {
		return fmt.Errorf("answer %q, want 200", strings.TrimSpace(line))
	}
	return nil
}
