package integration

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drainit/drainit/integration/lines"
	"github.com/drainit/drainit/integration/testenv"
	"github.com/drainit/drainit/signals"
)

// The README's stop-signal advice, on the real programs: haproxy and Apache httpd from Debian,
// each with a configuration of its own, as PID 1's app of a PID namespace, in front of an
// upstream in the test process that holds a request for as long as the test wants.
//
// Their official images set STOPSIGNAL to the app's graceful stop: SIGUSR1 for haproxy (its
// soft stop: it closes its listeners and finishes the connections it has) and SIGWINCH for
// httpd (graceful-stop: the same). Both hard-stop on SIGTERM, cutting what is in flight. With
// --stop-signal set to that signal, the runtime's signal and the kubelet's SIGTERM both start
// the drain, and the app gets its graceful signal after it (TestRealAppGracefulAfterDrain).
// Without it, the runtime's signal reaches the app at once and nothing drains
// (TestRealAppSignalForwardedAtOnce), and the kubelet's SIGTERM drains but then hard-stops the
// app (TestRealAppTermCutsInFlight). TestRealAppAdaptiveDrain: the adaptive drain finds the
// listeners through the app's worker processes (haproxy's master holds none) and ends a quiet
// period after the last new connection; TestRealAppWorkerOfAnotherUser, where drainit may not
// read the sockets of workers that run as another user. haproxy and httpd run with --forward
// child throughout (see realApp.forward).

// realApp is a real server the tests run under drainit.
type realApp struct {
	name    string // the program, looked up in PATH and the sbin directories
	pkg     string // Debian's package that has it
	stopSig syscall.Signal
	// forward is the --forward the tests give drainit. haproxy's master relays every signal
	// to its workers itself; with --forward group its worker gets the stop signal twice, from
	// drainit and again from the master, and about one stop in a hundred the second one lands
	// as the worker exits, which then dies of it (status 138) or segfaults (139), and the master
	// exits with that status (measured: 8 in 550 stops, none in 500 with --forward child).
	forward string
	// configure writes the app's configuration into dir (listening on listen, proxying to
	// upstream, both HOST:PORT) and returns its argv after the program.
	configure func(t *testing.T, dir, listen, upstream string) []string
	// ready, when set, says whether the app started in dir is ready for signals, beyond
	// answering requests.
	ready func(dir string) error
	// stopping is part of the line the app writes to stderr when its graceful stop begins.
	stopping string
}

// realApps are the apps, as their official images run them: haproxy in master-worker mode in
// the foreground (the image's entrypoint adds -W -db), httpd in the foreground (httpd-foreground
// execs `httpd -DFOREGROUND`), with Debian's event MPM, the image's default.
var realApps = []realApp{
	{
		name: "haproxy", pkg: "haproxy", stopSig: syscall.SIGUSR1, forward: "child",
		configure: haproxyConfig, ready: haproxyMasterReady,
		// The worker's line as it closes the frontend: it has taken its soft stop.
		stopping: "Proxy fe stopped",
	},
	{
		// httpd's parent stops its children itself. The event MPM's block SIGWINCH
		// (/proc/PID/status), so a group-wide one does nothing to them, but they catch it, and
		// with --forward group drainit took httpd for a pre-fork master and warned (workers: 3);
		// the prefork MPM's catch it unblocked (TestAdaptiveAutoPreFork).
		name: "apache2", pkg: "apache2-bin", stopSig: syscall.SIGWINCH, forward: "child",
		configure: apacheConfig,
		stopping:  "AH00492: caught SIGWINCH, shutting down gracefully",
	},
}

func haproxyConfig(t *testing.T, dir, listen, upstream string) []string {
	t.Helper()
	return haproxyConfigGlobal(t, dir, listen, upstream, "")
}

// haproxyConfigGlobal is haproxyConfig with lines of its own in the global section.
func haproxyConfigGlobal(t *testing.T, dir, listen, upstream, global string) []string {
	t.Helper()
	cfg := filepath.Join(dir, "haproxy.cfg")
	writeConfig(t, cfg, `global
`+global+`defaults
  mode http
  timeout connect 5s
  timeout client 30s
  timeout server 30s
frontend fe
  bind `+listen+`
  default_backend be
backend be
  server upstream `+upstream+`
`)
	return []string{"-W", "-db", "-f", cfg, "-S", filepath.Join(dir, "master.sock")}
}

// haproxyMasterReady asks haproxy's master, on its CLI, for its processes. Its worker answers
// requests before the master has set up its own signal handling: a SIGUSR1 that reached the
// master alone (drainit's --forward child) 30-35 ms after haproxy started was lost 8 times in
// 10, and haproxy went on serving; one 95 ms after was not, nor any of 20 sent once the CLI
// answered. The master serves its CLI from the loop it enters once its handlers are in place.
func haproxyMasterReady(dir string) error {
	got, err := haproxyCLI(filepath.Join(dir, "master.sock"), "show proc")
	if err != nil {
		return err
	}
	if !strings.Contains(got, "master") {
		return fmt.Errorf("show proc: %q", got)
	}
	return nil
}

// haproxyCLI runs one command on haproxy's CLI at the unix socket sock (the master's, or a stats
// socket) and returns the answer.
func haproxyCLI(sock, cmd string) (string, error) {
	c, err := net.DialTimeout("unix", sock, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(time.Second)); err != nil {
		return "", err
	}
	if _, err := io.WriteString(c, cmd+"\n"); err != nil {
		return "", err
	}
	// The CLI answers until the client is done: the end of what it sends.
	if err := c.(*net.UnixConn).CloseWrite(); err != nil {
		return "", err
	}
	got, err := io.ReadAll(c)
	return string(got), err
}

// apacheModules is where Debian's apache2-bin puts httpd's modules.
const apacheModules = "/usr/lib/apache2/modules"

func apacheConfig(t *testing.T, dir, listen, upstream string) []string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(apacheModules, "mod_proxy_http.so")); err != nil {
		testenv.SkipUnlessCI(t, "needs Debian's httpd modules (apt-get install apache2-bin): "+err.Error())
	}
	// Root starts it (as in the image); the children run as nobody. Its error log is stderr,
	// which it reopens by name, as the image's configuration has it.
	cfg := filepath.Join(dir, "httpd.conf")
	writeConfig(t, cfg, `ServerRoot `+dir+`
DefaultRuntimeDir `+dir+`
PidFile `+filepath.Join(dir, "httpd.pid")+`
ErrorLog /proc/self/fd/2
LogLevel notice
LoadModule mpm_event_module `+apacheModules+`/mod_mpm_event.so
LoadModule proxy_module `+apacheModules+`/mod_proxy.so
LoadModule proxy_http_module `+apacheModules+`/mod_proxy_http.so
LoadModule authz_core_module `+apacheModules+`/mod_authz_core.so
User #65534
Group #65534
ServerName localhost
Listen `+listen+`
ProxyPass / http://`+upstream+`/
`)
	return []string{"-f", cfg, "-DFOREGROUND"}
}

func writeConfig(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// eachRealApp runs f as one parallel subtest per app, skipping (or, under CI=true, failing) an
// app that is not installed.
func eachRealApp(t *testing.T, f func(t *testing.T, a realApp, bin string)) {
	requireRoot(t)
	for _, a := range realApps {
		t.Run(a.name, func(t *testing.T) {
			_, bin := installed(t, a.name)
			t.Parallel()
			f(t, a, bin)
		})
	}
}

// installed returns the app of realApps with the name and its program's path, skipping (or,
// under CI=true, failing) the test when it is not installed.
func installed(t *testing.T, name string) (realApp, string) {
	t.Helper()
	i := slices.IndexFunc(realApps, func(a realApp) bool { return a.name == name })
	if i < 0 {
		t.Fatalf("no real app %q", name)
	}
	a := realApps[i]
	return a, lookProgram(t, a.name, a.pkg)
}

// lookProgram returns the path of the program name, which Debian's package pkg installs,
// skipping (or, under CI=true, failing) the test when it is not installed.
func lookProgram(t *testing.T, name, pkg string) string {
	t.Helper()
	bin, err := testenv.LookPath(name)
	if err != nil {
		testenv.SkipUnlessCI(t, "needs Debian's "+name+" (apt-get install "+pkg+"): "+err.Error())
	}
	return bin
}

// slowSize is the size of the held request's answer: big enough to arrive in several reads, so
// that a cut shows as a short body or an error.
const slowSize = 256 << 10

// upstream is the app's backend, in the test process. GET /slow is answered in full (slowSize
// bytes, with a Content-Length) once the test releases it; anything else at once.
type upstream struct {
	srv     *httptest.Server
	arrived chan struct{} // one value per /slow request that has arrived
	release chan struct{} // closed by answer
	once    sync.Once
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{arrived: make(chan struct{}, 4), release: make(chan struct{})}
	body := strings.Repeat("x", slowSize)
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			u.arrived <- struct{}{}
			select {
			case <-u.release:
			case <-r.Context().Done(): // the app gave up on it
				return
			}
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = io.WriteString(w, body)
	}))
	// Released before the server closes, which waits for its handlers.
	t.Cleanup(u.srv.Close)
	t.Cleanup(u.answer)
	return u
}

// answer lets every held /slow request, and those to come, be answered.
func (u *upstream) answer() { u.once.Do(func() { close(u.release) }) }

func (u *upstream) addr() string { return strings.TrimPrefix(u.srv.URL, "http://") }

// answer is how a request through the app ended.
type answer struct {
	status int
	size   int
	err    error
	at     time.Time // when it ended
}

// full reports whether the request got a 200 with the whole body.
func (a answer) full() bool { return a.err == nil && a.status == http.StatusOK && a.size == slowSize }

func (a answer) String() string {
	if a.err != nil {
		return fmt.Sprintf("status %d, %d bytes, then %v", a.status, a.size, a.err)
	}
	return fmt.Sprintf("status %d, %d bytes", a.status, a.size)
}

// oneShot makes each request on a connection of its own, as a new client does.
var oneShot = &http.Client{Timeout: waitTimeout, Transport: &http.Transport{DisableKeepAlives: true}}

// get requests url and reads the whole answer.
func get(url string) answer {
	resp, err := oneShot.Get(url)
	if err != nil {
		return answer{err: err, at: time.Now()}
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	return answer{status: resp.StatusCode, size: int(n), err: err, at: time.Now()}
}

// realRun is a real app running under drainit.
type realRun struct {
	*drainitRun
	app  realApp
	addr string // where the app listens
	up   *upstream
}

// startReal starts a under drainit (PID 1) with its --forward and drainitArgs, and waits until
// it answers.
func startReal(t *testing.T, a realApp, bin string, drainitArgs ...string) *realRun {
	t.Helper()
	return startRealAt(t, a, bin, testenv.FreeLoopbackAddr(t), nil, drainitArgs...)
}

// startRealAt is startReal with the app listening on addr, and drainit started through launcher
// (spec.launcher) when it is not nil.
func startRealAt(t *testing.T, a realApp, bin, addr string, launcher []string, drainitArgs ...string) *realRun {
	t.Helper()
	r := &realRun{app: a, addr: addr, up: newUpstream(t)}
	dir := t.TempDir()
	argv := append([]string{bin}, a.configure(t, dir, r.addr, r.up.addr())...)
	args := append([]string{"--forward", a.forward}, drainitArgs...)
	r.drainitRun = start(t, spec{mode: pid1, args: args, app: argv, launcher: launcher})
	ready := func() bool { return a.ready == nil || a.ready(dir) == nil }
	deadline := time.Now().Add(waitTimeout)
	for !get(r.url("/")).full() || !ready() {
		if !r.running() || time.Now().After(deadline) {
			t.Fatalf("%s did not answer within %s\n%s", a.name, waitTimeout, r.dump())
		}
		time.Sleep(pollEvery)
	}
	return r
}

func (r *realRun) url(path string) string { return "http://" + r.addr + path }

// inFlight starts a request that the upstream holds, and returns once it does.
func (r *realRun) inFlight(t *testing.T) <-chan answer {
	t.Helper()
	ch := make(chan answer, 1)
	go func() { ch <- get(r.url("/slow")) }()
	select {
	case <-r.up.arrived:
	case <-time.After(waitTimeout):
		t.Fatalf("the request through %s never reached the upstream\n%s", r.app.name, r.dump())
	}
	return ch
}

// getUntilClosed requests / over HTTP/1.0 and reads until the app closes the connection, so that
// the app closes it first: its side then stays in TIME_WAIT, where the adaptive drain sees it in
// the TCP table however short it was. (A client that closes first after reading the body, as Go's
// does, leaves nothing there once the app has closed too, and a drain that reads the table may
// miss it: internal/drainwatch.)
func (r *realRun) getUntilClosed() error {
	c, err := net.DialTimeout("tcp", r.addr, waitTimeout)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(waitTimeout)); err != nil {
		return err
	}
	if _, err := io.WriteString(c, "GET / HTTP/1.0\r\n\r\n"); err != nil {
		return err
	}
	got, err := io.ReadAll(c)
	if err != nil {
		return err
	}
	// "HTTP/1.0 200 " from haproxy, "HTTP/1.1 200 " from httpd.
	if len(got) < slowSize || !bytes.HasPrefix(got, []byte("HTTP/1.")) || !bytes.HasPrefix(got[len("HTTP/1.0 "):], []byte("200 ")) {
		return fmt.Errorf("answer %.40q…, %d bytes: want a 200 with %d bytes of body", got, len(got), slowSize)
	}
	return nil
}

// awaitAnswer waits for a request's answer.
func (r *realRun) awaitAnswer(t *testing.T, ch <-chan answer) answer {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(waitTimeout):
		t.Fatalf("no answer from %s within %s\n%s", r.app.name, waitTimeout, r.dump())
	}
	return answer{}
}

// awaitRefused dials the app until it refuses the connection (its listeners are closed) and
// returns when the refusal came.
func (r *realRun) awaitRefused(t *testing.T) time.Time {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		c, err := net.DialTimeout("tcp", r.addr, time.Second)
		if errors.Is(err, syscall.ECONNREFUSED) {
			return time.Now()
		}
		if err == nil {
			c.Close()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still accepted connections %s later (last: %v)\n%s", r.app.name, waitTimeout, err, r.dump())
		}
		time.Sleep(pollEvery)
	}
}

// awaitEvent waits for drainit's log entry with the message and returns it.
func (r *realRun) awaitEvent(t *testing.T, message string) logEntry {
	t.Helper()
	r.stderr.AwaitLine(t, waitTimeout, "drainit's "+message, lines.Containing(`"message":"`+message+`"`))
	return only(t, r.drainitRun, message)
}

// checkCleanEnd checks that the app's own stop left nothing for drainit to end or reap: no
// process left behind (apache2's and haproxy's workers exit before their parent does), no
// orphan reaped, no SIGKILL; and that drainit exited with the app's status, which it returns.
func (r *drainitRun) checkCleanEnd(t *testing.T, st exitStatus) int {
	t.Helper()
	for _, m := range []string{"the app left processes behind: SIGTERM to them",
		"app still running: SIGKILL to everything", "reaped orphan"} {
		if es := events(r, m); len(es) > 0 {
			t.Errorf("drainit logged %q: %v\n%s", m, es, r.dump())
		}
	}
	status, _ := only(t, r, "app exited").int("status")
	if st != (exitStatus{code: status}) {
		t.Errorf("drainit: %v, want exit %d, the app's status\n%s", st, status, r.dump())
	}
	return status
}

// TestRealAppGracefulAfterDrain: the README's advice, --stop-signal USR1 for haproxy and WINCH
// for httpd. The trigger is the kubelet's SIGTERM (a pod with no lifecycle.stopSignal) or the
// image's own signal (podman stop, containerd); either starts the drain, during which the app
// keeps serving new connections, and the app gets its graceful signal after it: it closes its
// listeners then, not before, and finishes the request it had in flight with a full 200.
// drainit exits with the app's status, 0, as soon as the app has finished it.
func TestRealAppGracefulAfterDrain(t *testing.T) {
	const drain, grace = 1500 * time.Millisecond, 10 * time.Second
	eachRealApp(t, func(t *testing.T, a realApp, bin string) {
		for _, trigger := range []syscall.Signal{syscall.SIGTERM, a.stopSig} {
			t.Run(signals.Name(trigger), func(t *testing.T) {
				t.Parallel()
				r := startReal(t, a, bin, "--stop-signal", signals.Name(a.stopSig),
					"--drain-delay", drain.String(), "--grace-period", grace.String(), "--log-level", "debug")
				slow := r.inFlight(t)

				sent := time.Now()
				r.signal(trigger)
				during := get(r.url("/"))
				stop := r.awaitEvent(t, "stop signal sent")
				stopping := r.stderr.AwaitContains(t, waitTimeout, a.stopping)
				refused := r.awaitRefused(t)
				select {
				case ans := <-slow:
					t.Fatalf("the in-flight request ended (%v) before the upstream answered it\n%s", ans, r.dump())
				default:
				}
				r.up.answer()
				ans := r.awaitAnswer(t, slow)
				st := r.wait(waitTimeout)
				took := time.Since(sent)
				t.Logf("%s: new connection answered %s after the trigger; graceful stop logged after %s, listeners closed after %s; in-flight request answered after %s; drainit exited after %s",
					a.name, during.at.Sub(sent), stopping.At.Sub(sent), refused.Sub(sent), ans.at.Sub(sent), took)

				if e := only(t, r.drainitRun, "stop sequence started"); e.str("signal") != signals.Name(trigger) {
					t.Errorf("the stop sequence was started by %q, want %s", e.str("signal"), signals.Name(trigger))
				}
				if stop.str("signal") != signals.Name(a.stopSig) {
					t.Errorf("stop signal %q, want %s", stop.str("signal"), signals.Name(a.stopSig))
				}
				if el := elapsedOf(t, stop); el < drain || el > drain+dumpSlack {
					t.Errorf("stop signal sent %s after the trigger, want the drain delay %s (+%s)", el, drain, dumpSlack)
				}
				stopAt, err := stop.time()
				if err != nil {
					t.Fatal(err)
				}
				if !during.full() || !during.at.Before(stopAt) {
					t.Errorf("a new connection during the drain: %v at %s, want a full 200 before the stop signal (%s)",
						during, during.at.Sub(sent), stopAt.Sub(sent))
				}
				// The app's own account: it began its graceful stop, and closed its listeners, once
				// the drain was over.
				for what, at := range map[string]time.Time{"logged its graceful stop": stopping.At, "closed its listeners": refused} {
					if got := at.Sub(sent); got < drain || got > drain+dumpSlack {
						t.Errorf("%s %s %s after the trigger, want the drain delay %s (+%s)", a.name, what, got, drain, dumpSlack)
					}
				}
				if !ans.full() {
					t.Errorf("the request in flight across the stop: %v, want a full 200", ans)
				}
				if status := r.checkCleanEnd(t, st); status != 0 {
					t.Errorf("%s exited %d after its graceful stop, want 0", a.name, status)
				}
				if took > grace/2 {
					t.Errorf("drainit exited %s after the trigger, want well before the %s grace period", took, grace)
				}
			})
		}
	})
}

// TestRealAppSignalForwardedAtOnce: what the advice prevents. Without --stop-signal, the image's
// STOPSIGNAL is no trigger: drainit forwards it at once, the app begins its graceful stop and
// refuses new connections right away (measured: within a few milliseconds), with no drain. Its
// graceful stop still finishes the request in flight.
func TestRealAppSignalForwardedAtOnce(t *testing.T) {
	const drain = 3 * time.Second
	eachRealApp(t, func(t *testing.T, a realApp, bin string) {
		r := startReal(t, a, bin, "--drain-delay", drain.String(), "--grace-period", "10s", "--log-level", "debug")
		slow := r.inFlight(t)

		sent := time.Now()
		r.signal(a.stopSig)
		refused := r.awaitRefused(t)
		stopping := r.stderr.AwaitContains(t, waitTimeout, a.stopping)
		r.up.answer()
		ans := r.awaitAnswer(t, slow)
		st := r.wait(waitTimeout)
		t.Logf("%s: %s reached drainit; the app logged its graceful stop after %s and refused new connections after %s",
			a.name, signals.Name(a.stopSig), stopping.At.Sub(sent), refused.Sub(sent))

		for what, at := range map[string]time.Time{"logged its graceful stop": stopping.At, "refused new connections": refused} {
			if got := at.Sub(sent); got > dumpSlack {
				t.Errorf("%s %s %s after %s reached drainit, want at once (within %s; the drain delay is %s)",
					a.name, what, got, signals.Name(a.stopSig), dumpSlack, drain)
			}
		}
		for _, m := range []string{"stop sequence started", "draining: the app keeps serving", "stop signal sent"} {
			if len(events(r.drainitRun, m)) > 0 {
				t.Errorf("drainit logged %q: %s started a stop sequence without --stop-signal\n%s", m, signals.Name(a.stopSig), r.dump())
			}
		}
		forwardedFirst(t, r.drainitRun, signals.Name(a.stopSig))
		if !ans.full() {
			t.Errorf("the request in flight: %v, want a full 200 (the app's graceful stop finishes it)", ans)
		}
		if status := r.checkCleanEnd(t, st); status != 0 {
			t.Errorf("%s exited %d after its graceful stop, want 0", a.name, status)
		}
	})
}

// TestRealAppTermCutsInFlight: what the advice prevents on the kubelet's side. Without
// --stop-signal the kubelet's SIGTERM drains, and then the app gets SIGTERM, its hard stop: the
// request in flight is cut at once, answered with no full 200, though its upstream would still
// answer it. (haproxy's worker does not catch SIGTERM and dies of it; httpd's children close
// their connections.) Both exit 0 all the same, and drainit with them.
func TestRealAppTermCutsInFlight(t *testing.T) {
	const drain = time.Second
	eachRealApp(t, func(t *testing.T, a realApp, bin string) {
		r := startReal(t, a, bin, "--drain-delay", drain.String(), "--grace-period", "10s", "--log-level", "debug")
		slow := r.inFlight(t)

		sent := time.Now()
		r.signal(syscall.SIGTERM)
		stop := r.awaitEvent(t, "stop signal sent")
		ans := r.awaitAnswer(t, slow) // the upstream still holds it
		r.up.answer()
		st := r.wait(waitTimeout)
		t.Logf("%s: the in-flight request ended %s after the trigger: %v", a.name, ans.at.Sub(sent), ans)

		if stop.str("signal") != "SIGTERM" {
			t.Errorf("stop signal %q, want SIGTERM", stop.str("signal"))
		}
		if ans.full() {
			t.Errorf("the request in flight got a full 200 though the upstream never answered it\n%s", r.dump())
		}
		if got := ans.at.Sub(sent); got < drain || got > drain+dumpSlack {
			t.Errorf("the request in flight was cut %s after the trigger, want at the stop signal, after the drain delay %s (+%s)",
				got, drain, dumpSlack)
		}
		if status := r.checkCleanEnd(t, st); status != 0 {
			t.Errorf("%s exited %d after SIGTERM, want 0 (as measured)", a.name, status)
		}
	})
}

// TestRealAppAdaptiveDrain: --drain adaptive finds the app's listeners through its process
// tree: haproxy's are its worker's alone (seen: its master holds none), httpd's are shared by its
// parent and children. New connections during the drain keep it open, and it ends once none has
// come for --drain-quiet; the app then gets its graceful signal and finishes what it has in
// flight. The host's network namespace is shared, so the drain reads the TCP table
// (sock-diag), which sees these connections: the app closes each first.
func TestRealAppAdaptiveDrain(t *testing.T) {
	const quiet, every, n = 500 * time.Millisecond, 150 * time.Millisecond, 4
	eachRealApp(t, func(t *testing.T, a realApp, bin string) {
		if a.name == "haproxy" {
			// Without its master's CLI socket (-S), a UNIX listener, which would make the drain
			// fixed. The master's handlers are in place long before its SIGUSR1 comes, after
			// the drain (haproxyMasterReady).
			configure := a.configure
			a.configure = func(t *testing.T, dir, listen, upstream string) []string {
				argv := configure(t, dir, listen, upstream)
				return slices.DeleteFunc(argv, func(s string) bool { return s == "-S" || strings.HasSuffix(s, "master.sock") })
			}
			a.ready = nil
		}
		r := startReal(t, a, bin, "--stop-signal", signals.Name(a.stopSig), "--drain", "adaptive",
			"--drain-quiet", quiet.String(), "--drain-max", "5s", "--grace-period", "15s", "--log-level", "debug")
		slow := r.inFlight(t)

		sent := time.Now()
		r.signal(syscall.SIGTERM)
		r.awaitEvent(t, "draining until no new connections arrive: the app keeps serving")
		tick := time.NewTicker(every)
		defer tick.Stop()
		var last time.Time // when the last new connection was made
		for i := range n {
			<-tick.C
			last = time.Now()
			if err := r.getUntilClosed(); err != nil {
				t.Fatalf("new connection %d during the drain: %v\n%s", i+1, err, r.dump())
			}
		}
		stop := r.awaitEvent(t, "stop signal sent")
		r.stderr.AwaitContains(t, waitTimeout, a.stopping)
		r.up.answer()
		ans := r.awaitAnswer(t, slow)
		st := r.wait(waitTimeout)

		over := only(t, r.drainitRun, "adaptive drain over")
		t.Logf("%s: the last new connection %s after the trigger; %v", a.name, last.Sub(sent), over)
		if over.str("reason") != "quiet" {
			t.Errorf("the adaptive drain ended by %q, want quiet\n%s", over.str("reason"), r.dump())
		}
		if l, _ := over.int("listeners"); l != 1 {
			t.Errorf("the adaptive drain watched %d listeners, want the app's one", l)
		}
		// The first may come before the watch's first look at the table, and count as there
		// already.
		if c, _ := over.int("new_connections"); c < n-1 {
			t.Errorf("the adaptive drain saw %d new connections, want %d at least", c, n-1)
		}
		stopAt, err := stop.time()
		if err != nil {
			t.Fatal(err)
		}
		// The log's times are in whole milliseconds, cut down; the drain ends at a poll (100 ms
		// apart here) that comes a quiet period after the poll that saw the last connection.
		if got := stopAt.Sub(last); got < quiet-time.Millisecond || got > quiet+dumpSlack {
			t.Errorf("stop signal sent %s after the last new connection, want the quiet period %s (+%s)", got, quiet, dumpSlack)
		}
		if !ans.full() {
			t.Errorf("the request in flight across the stop: %v, want a full 200", ans)
		}
		if status := r.checkCleanEnd(t, st); status != 0 {
			t.Errorf("%s exited %d after its graceful stop, want 0", a.name, status)
		}
	})
}

// TestRealAppWorkerOfAnotherUser: haproxy started as root whose worker runs as another user
// (`user haproxy` in Debian's haproxy.cfg; here uid 65534), under drainit as root without
// CAP_SYS_PTRACE, which containers lack unless given it (Docker's and containerd's default
// capabilities). drainit may then list the worker's file descriptors (root's CAP_DAC_OVERRIDE)
// but not read them: the kernel asks for CAP_SYS_PTRACE to read another user's. The worker alone
// holds the listener (haproxy's master holds none), so drainit cannot see it:
//
//   - the ready probe on haproxy's port used to draw the warning that a process drainit did not
//     start listens there (it took the unreadable worker for a stranger); now drainit cannot
//     tell, and says nothing;
//   - the adaptive drain falls back to the fixed delay, and used to say that the app's tree holds
//     no listening socket; now it says which process it may not read, and names --drain-ports,
//     with which the adaptive drain watches haproxy's port.
//
// httpd's children run as another user too, but its parent, root's, holds the listener as
// well: its adaptive drain watches it all the same.
func TestRealAppWorkerOfAnotherUser(t *testing.T) {
	requireRoot(t)
	setpriv, err := testenv.LookPath("setpriv")
	if err != nil {
		testenv.SkipUnlessCI(t, "needs setpriv (util-linux) to start drainit without CAP_SYS_PTRACE: "+err.Error())
	}
	withoutPtrace := []string{setpriv, "--inh-caps=-sys_ptrace", "--bounding-set=-sys_ptrace", "--"}
	a, bin := installed(t, "haproxy")
	a.configure = func(t *testing.T, dir, listen, upstream string) []string {
		return haproxyConfigGlobal(t, dir, listen, upstream, "  uid 65534\n  gid 65534\n")
	}
	const quiet = 300 * time.Millisecond

	t.Run("own ports", func(t *testing.T) {
		t.Parallel()
		addr := testenv.FreeLoopbackAddr(t)
		r := startRealAt(t, a, bin, addr, withoutPtrace, "--stop-signal", "USR1", "--ready-probe", "tcp://"+addr,
			"--drain", "adaptive", "--drain-max", "3s", "--drain-delay", "1s", "--grace-period", "10s", "--log-level", "debug")
		r.awaitEvent(t, "app ready")
		r.signal(syscall.SIGTERM)
		fallback := r.awaitEvent(t, unwatchableWarning)
		if st := r.wait(waitTimeout); st != (exitStatus{code: 0}) {
			t.Errorf("drainit: %v, want exit 0\n%s", st, r.dump())
		}
		if es := events(r.drainitRun, "the ready probe passed on a port that a process drainit did not start listens on: /readyz follows that process, not the app"); len(es) > 0 {
			t.Errorf("drainit took haproxy's worker for a stranger: %v", es)
		}
		// haproxy's own port is held by its worker alone, which drainit may not read: the
		// warning names it, the worker and why, beside the master's CLI socket (a UNIX one).
		var why string
		for _, l := range fallback.listeners("unwatchable") {
			if strings.Contains(l, addr) {
				why = l
			}
		}
		t.Logf("the adaptive drain: %s", why)
		for _, want := range []string{"may not read", "CAP_SYS_PTRACE"} {
			if !strings.Contains(why, want) {
				t.Errorf("why the adaptive drain fell back, for %s: %q, want it to say %q (%v)", addr, why, want, fallback)
			}
		}
	})

	// adaptiveOnOne stops a, listening on addr, under drainit without CAP_SYS_PTRACE, with an
	// adaptive drain, and checks that the drain watched one listener and ended by its quiet period.
	adaptiveOnOne := func(t *testing.T, a realApp, bin, addr string, drainitArgs ...string) {
		t.Helper()
		args := append([]string{"--stop-signal", signals.Name(a.stopSig), "--drain", "adaptive", "--drain-quiet",
			quiet.String(), "--drain-max", "3s", "--grace-period", "10s", "--log-level", "debug"}, drainitArgs...)
		r := startRealAt(t, a, bin, addr, withoutPtrace, args...)
		r.signal(syscall.SIGTERM)
		over := r.awaitEvent(t, "adaptive drain over")
		if st := r.wait(waitTimeout); st != (exitStatus{code: 0}) {
			t.Errorf("drainit: %v, want exit 0\n%s", st, r.dump())
		}
		if l, _ := over.int("listeners"); over.str("reason") != "quiet" || l != 1 {
			t.Errorf("%s's adaptive drain (%q): %v, want it to end quiet, watching its 1 listener", a.name, drainitArgs, over)
		}
	}
	// httpd's parent, root's, holds the listener its children use: were it alone in its network
	// namespace, drainit would watch it (TestUnreadableProcessListener). Here the namespace is
	// the host's, with other listeners of root's (the machine's, the other tests'), and root runs
	// httpd's parent: any of them may be one its unreadable children opened, for all drainit can
	// tell, and the drain is fixed, naming them.
	t.Run("httpd", func(t *testing.T) {
		a, bin := installed(t, "apache2")
		t.Parallel()
		r := startRealAt(t, a, bin, testenv.FreeLoopbackAddr(t), withoutPtrace, "--stop-signal", "WINCH", "--drain", "adaptive",
			"--drain-quiet", quiet.String(), "--drain-max", "3s", "--drain-delay", "1s", "--grace-period", "10s")
		r.signal(syscall.SIGTERM)
		fallback := r.awaitEvent(t, unwatchableWarning)
		if st := r.wait(waitTimeout); st != (exitStatus{code: 0}) {
			t.Errorf("drainit: %v, want exit 0\n%s", st, r.dump())
		}
		// Among the host's listeners (the other tests' too) the warning can pass a log line's
		// 4096 bytes, and the line is then cut, its longest strings first (logline.Cut): a
		// listener emptied so says nothing, and one whole must say why.
		ls := fallback.listeners("unwatchable")
		if !slices.ContainsFunc(ls, func(l string) bool {
			return strings.Contains(l, "may not read") && strings.Contains(l, "CAP_SYS_PTRACE")
		}) {
			t.Errorf("the warning's listeners %q, want them held by no process drainit may read, and why", ls)
		}
		if w := only(t, r.drainitRun, "adaptive drain: listeners found").strs("watched"); len(w) != 1 || !strings.Contains(w[0], r.addr) {
			t.Errorf("watched %q, want httpd's own listener, which its parent holds", w)
		}
	})
	t.Run("drain ports", func(t *testing.T) {
		t.Parallel()
		addr := testenv.FreeLoopbackAddr(t)
		adaptiveOnOne(t, a, bin, addr, "--drain-ports", addr)
	})
}

// A pre-fork master that passes the stop signal on to its workers (gunicorn, on Debian's
// python3-flask): under the default --forward group each worker got SIGTERM from drainit and
// again from the master, and some died of the second ("terminated due to signal 15": 2 to 7 of
// 9 workers a stop). drainit warns of it as it sends the stop signal; with --forward child there
// is no warning and no worker dies of a signal. An app whose children run another program, the
// stop signal caught by the app alone, gets no warning. Under --forward group gunicorn may also
// not stop at all (seen once in CI: its master respawned a worker that drainit's signal killed
// before the master took its own, then waited past the kill point): the harm the warning names,
// so there drainit's SIGKILL at the kill point is an outcome too.
func TestPreForkMasterWarned(t *testing.T) {
	const warning = "the app looks like a pre-fork master"
	gunicorn := lookProgram(t, "gunicorn", "gunicorn")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "app.py"), []byte("from flask import Flask\napp = Flask(__name__)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := testenv.FreeLoopbackAddr(t)
	serving := func() bool { // a worker answered: it has set its signal handlers
		resp, err := http.Get("http://" + addr + "/")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	}
	for _, c := range []struct {
		name, forward string
		app           []string
		booted        func(string) bool // the line the app writes for each of its 9 children
		ready         func() bool
		warned        bool
	}{
		{"gunicorn", "group", []string{gunicorn, "--chdir", dir, "-w", "9", "-b", addr, "app:app"}, lines.Containing("Booting worker with pid"), serving, true},
		{"gunicorn", "child", []string{gunicorn, "--chdir", dir, "-w", "9", "-b", addr, "app:app"}, lines.Containing("Booting worker with pid"), serving, false},
		{"shell", "group", []string{"sh", "-c", `trap "exit 0" TERM; for i in 1 2 3 4 5 6 7 8 9; do sleep 300 & echo up >&2; done; wait`},
			func(l string) bool { return l == "up" }, func() bool { return true }, false},
	} {
		t.Run(c.name+"-"+c.forward, func(t *testing.T) {
			d := start(t, spec{mode: subreaper, args: []string{"--forward", c.forward, "--drain-delay", "0", "--grace-period", "10s"}, app: c.app})
			d.stderr.Await(t, waitTimeout, "a line for each of the 9 children", func(ls []string) bool {
				return len(slices.DeleteFunc(ls, func(l string) bool { return !c.booted(l) })) == 9
			})
			var last time.Time
			for _, l := range d.stderr.Lines() {
				if c.booted(l.Text) && l.At.After(last) {
					last = l.At
				}
			}
			waitUntil(t, waitTimeout, "the app serves", c.ready)
			// drainit counts a child a worker once it has run a second (a child just forked still
			// runs its parent's program until its exec).
			waitUntil(t, waitTimeout, "the children a second old", func() bool { return time.Since(last) > 1100*time.Millisecond })
			d.signal(syscall.SIGTERM)
			if st := d.wait(waitTimeout); st != (exitStatus{code: 0}) && (!c.warned || st != exitStatus{code: 137}) {
				t.Fatalf("drainit: %v, want exit 0 (or 137, warned)\n%s", st, d.dump())
			}
			warned := false
			for _, e := range d.logs() {
				warned = warned || strings.HasPrefix(e.msg(), warning)
			}
			if warned != c.warned {
				t.Errorf("warned of a pre-fork master: %v, want %v\n%s", warned, c.warned, d.dump())
			}
			if n := d.stderr.Count(lines.Containing("terminated due to signal")); c.forward == "child" && n > 0 {
				t.Errorf("with --forward child, %d workers died of a signal\n%s", n, d.dump())
			}
		})
	}
}
