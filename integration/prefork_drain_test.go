package integration

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drainit/drainit/internal/proc"
	"github.com/drainit/drainit/internal/testenv"
)

// preForkNginx is nginx with two workers, serving 200 itself on addr; its files in dir.
const preForkNginx = `daemon off;
master_process on;
worker_processes 2;
pid %[1]s/nginx.pid;
error_log stderr notice;
events { worker_connections 256; }
http {
	client_body_temp_path %[1]s/client_body;
	proxy_temp_path %[1]s/proxy;
	fastcgi_temp_path %[1]s/fastcgi;
	uwsgi_temp_path %[1]s/uwsgi;
	scgi_temp_path %[1]s/scgi;
	access_log off;
	server {
		listen %[2]s;
		location / { return 200 "ok\n"; }
	}
}
`

// TestAdaptiveAutoPreFork: pre-fork servers from Debian under drainit with --drain-quiet auto,
// as the README advises them (--forward child: their masters stop their workers): gunicorn with
// two workers on a flask app, nginx with two workers. The listener their master opened and its
// workers share is found (its holders are the master and the workers), the drain ends quiet
// after the traffic stops, no request fails, every worker is stopped and reaped by its master,
// nothing is left for drainit to kill, and drainit exits with the app's 0. The host's network
// namespace is shared: the drain counts with sock-diag, from the history of the app's listeners.
func TestAdaptiveAutoPreFork(t *testing.T) {
	requireRoot(t)
	gunicorn := lookProgram(t, "gunicorn", "gunicorn")
	nginx := lookProgram(t, "nginx", "nginx-light")
	for _, c := range []struct {
		name    string
		stopSig string
		argv    func(t *testing.T, dir, addr string) []string
		workers string // the line the app writes as each worker starts
	}{
		{"gunicorn", "TERM", func(t *testing.T, dir, addr string) []string {
			writeConfig(t, filepath.Join(dir, "app.py"), "from flask import Flask\napp = Flask(__name__)\n@app.route('/')\ndef ok():\n    return 'ok'\n")
			return []string{gunicorn, "--chdir", dir, "-w", "2", "-b", addr, "--graceful-timeout", "10", "app:app"}
		}, "Booting worker with pid"},
		{"nginx", "QUIT", func(t *testing.T, dir, addr string) []string {
			writeConfig(t, filepath.Join(dir, "nginx.conf"), fmt.Sprintf(preForkNginx, dir, addr))
			return []string{nginx, "-c", filepath.Join(dir, "nginx.conf"), "-p", dir, "-e", "stderr"}
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			const rate, warmup, d = 100, 3 * time.Second, 300 * time.Millisecond
			dir := t.TempDir()
			addr := testenv.FreeLoopbackAddr(t)
			r := start(t, spec{mode: pid1, app: c.argv(t, dir, addr), args: []string{"--forward", "child", "--stop-signal", c.stopSig,
				"--drain", "adaptive", "--drain-quiet", "auto", "--drain-max", "10s", "--grace-period", "30s"}})
			waitUntil(t, waitTimeout, c.name+" answers", func() bool { return get("http://"+addr+"/").status == http.StatusOK })

			l := loadThroughStop("http://"+addr+"/", rate, warmup, d, func() { r.signal(syscall.SIGTERM) })
			st := r.wait(waitTimeout)
			if len(l.failures) > 0 {
				t.Errorf("%d of %d requests failed, want none: %v\n%s", len(l.failures), l.sent, l.failures[:min(5, len(l.failures))], r.dump())
			}
			over := only(t, r, "adaptive drain over")
			found := only(t, r, "adaptive drain: listeners found")
			t.Logf("%d requests; %v; %v", l.sent, found["watched"], over)
			if over.str("reason") != "quiet" || over.str("history_from") != "app-listeners" {
				t.Errorf("the drain ended %q, history from %q: want quiet, from the app's listeners\n%s", over.str("reason"), over.str("history_from"), r.dump())
			}
			// The workers hold the master's listener too: it is found once, with one of them.
			if w := found.strs("watched"); len(w) != 1 || !strings.Contains(w[0], addr) {
				t.Errorf("watched %q, want the app's one listener on %s", w, addr)
			}
			stopAt, err := only(t, r, "stop signal sent").time()
			if err != nil {
				t.Fatal(err)
			}
			if after := stopAt.Sub(l.trigger); after < d || after > d+time.Second {
				t.Errorf("stop signal sent %s after the trigger, want between D (%s) and D + 1 s", after, d)
			}
			if c.workers != "" {
				if n := len(slices.DeleteFunc(r.stderr.Texts(), func(l string) bool { return !strings.Contains(l, c.workers) })); n < 2 {
					t.Errorf("%d workers booted, want 2", n)
				}
			}
			for _, m := range []string{"the app left processes behind: SIGTERM to them", "app still running: SIGKILL to everything", "reaped orphan"} {
				if es := events(r, m); len(es) > 0 {
					t.Errorf("drainit logged %q: %v\n%s", m, es, r.dump())
				}
			}
			if st != (exitStatus{}) {
				t.Errorf("drainit: %v, want exit 0, the app's\n%s", st, r.dump())
			}
			if _, err := os.Stat(filepath.Join(dir, "nginx.pid")); c.name == "nginx" && err == nil {
				t.Errorf("nginx's pid file is still there: its master did not finish its stop")
			}
		})
	}
}

// load is what loadThroughStop sent, and when it stopped the app.
type load struct {
	sent     int
	failures []string
	trigger  time.Time
}

// loadThroughStop sends url a GET on a new connection rate times a second, for warmup (the pod in
// service), then calls stop and goes on for d (the propagation delay: the proxies still route to
// the pod), and returns once every request has been answered or has failed.
func loadThroughStop(url string, rate int, warmup, d time.Duration, stop func()) load {
	var (
		l  load
		mu sync.Mutex
		wg sync.WaitGroup
	)
	tick := time.NewTicker(time.Second / time.Duration(rate)) // the load's pace, not a synchronisation
	defer tick.Stop()
	begin := time.Now()
	for now := range tick.C {
		if l.trigger.IsZero() && now.Sub(begin) >= warmup {
			l.trigger = time.Now()
			stop()
		}
		if !l.trigger.IsZero() && now.Sub(l.trigger) > d {
			break
		}
		l.sent++
		wg.Add(1)
		go func() {
			defer wg.Done()
			if ans := get(url); ans.err != nil || ans.status != http.StatusOK {
				mu.Lock()
				l.failures = append(l.failures, ans.String())
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return l
}

// TestNonRootNoCapabilities: drainit and the app as uid 65532 (distroless's nonroot) with no
// capabilities at all, drainit PID 1 of its PID namespace, as a pod with runAsUser: 65532 and
// capabilities dropped runs them: the adaptive drain with --drain-quiet auto finds the app's
// listener (its own user's process), counts with sock-diag from the history of the app's
// listeners (the host's namespace is shared), ends quiet after the traffic, no request fails,
// drainit reaps the app and exits with its status, and it warns of nothing it lacked.
func TestNonRootNoCapabilities(t *testing.T) {
	requireRoot(t)
	setpriv := lookProgram(t, "setpriv", "util-linux")
	// The binaries where uid 65532 may run them: the test's temporary directories are root's.
	dir, err := os.MkdirTemp("", "drainit-nonroot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{drainitBin, testappBin} {
		data, err := os.ReadFile(b)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(b)), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const rate, warmup, d = 100, 3 * time.Second, 300 * time.Millisecond
	addr := testenv.FreeLoopbackAddr(t)
	r := start(t, spec{mode: pid1, bin: setpriv,
		args: []string{"--reuid=65532", "--regid=65532", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all",
			filepath.Join(dir, "drainit"), "--drain", "adaptive", "--drain-quiet", "auto", "--drain-max", "10s", "--grace-period", "30s"},
		app: []string{filepath.Join(dir, "testapp"), "serve", "-addr", addr, "-graceful"}})
	r.stdout.AwaitContains(t, waitTimeout, "ready app")
	for key, want := range map[string]string{"Uid": "65532\t65532\t65532\t65532", "CapEff": "0000000000000000", "CapBnd": "0000000000000000"} {
		if got, err := proc.StatusField("/proc", r.pid, key); err != nil || got != want {
			t.Fatalf("drainit's %s: %q (%v), want %q", key, got, err, want)
		}
	}
	l := loadThroughStop("http://"+addr+"/", rate, warmup, d, func() { r.signal(syscall.SIGTERM) })
	st := r.wait(waitTimeout)
	if len(l.failures) > 0 {
		t.Errorf("%d of %d requests failed, want none: %v\n%s", len(l.failures), l.sent, l.failures[:min(5, len(l.failures))], r.dump())
	}
	over := only(t, r, "adaptive drain over")
	t.Logf("%d requests; %v", l.sent, over)
	if over.str("reason") != "quiet" || over.str("history_from") != "app-listeners" {
		t.Errorf("the drain ended %q, history from %q: want quiet, from the app's listeners\n%s", over.str("reason"), over.str("history_from"), r.dump())
	}
	for _, e := range r.logs() {
		if e.str("level") == "warn" || e.str("level") == "error" {
			t.Errorf("drainit warned as uid 65532 without capabilities: %v", e)
		}
	}
	if st != (exitStatus{}) {
		t.Errorf("drainit: %v, want exit 0, the app's\n%s", st, r.dump())
	}
}
