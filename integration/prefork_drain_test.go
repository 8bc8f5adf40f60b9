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

			var (
				mu       sync.Mutex
				sent     int
				failures []string
				wg       sync.WaitGroup
			)
			tick := time.NewTicker(time.Second / rate) // the load's pace, not a synchronisation
			defer tick.Stop()
			begin := time.Now()
			var trigger time.Time
			for now := range tick.C {
				if trigger.IsZero() && now.Sub(begin) >= warmup {
					trigger = time.Now()
					r.signal(syscall.SIGTERM)
				}
				if !trigger.IsZero() && now.Sub(trigger) > d {
					break
				}
				sent++
				wg.Add(1)
				go func() {
					defer wg.Done()
					if ans := get("http://" + addr + "/"); ans.err != nil || ans.status != http.StatusOK {
						mu.Lock()
						failures = append(failures, ans.String())
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			st := r.wait(waitTimeout)
			if len(failures) > 0 {
				t.Errorf("%d of %d requests failed, want none: %v\n%s", len(failures), sent, failures[:min(5, len(failures))], r.dump())
			}
			over := only(t, r, "adaptive drain over")
			found := only(t, r, "adaptive drain: listeners found")
			t.Logf("%d requests; %v; %v", sent, found["watched"], over)
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
			if after := stopAt.Sub(trigger); after < d || after > d+time.Second {
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
