package integration

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drainit/drainit/integration/lines"
	"github.com/drainit/drainit/integration/testenv"
	"github.com/drainit/drainit/internal/proc"
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

// preForkApache is httpd with the prefork MPM, two children at all times (StartServers 2, at
// most 2), serving index.html from %[3]s itself; its files in %[1]s, listening on %[2]s. Root
// starts it, the children run as nobody.
const preForkApache = `ServerRoot %[1]s
DefaultRuntimeDir %[1]s
PidFile %[1]s/httpd.pid
ErrorLog /proc/self/fd/2
LogLevel notice
LoadModule mpm_prefork_module ` + apacheModules + `/mod_mpm_prefork.so
LoadModule dir_module ` + apacheModules + `/mod_dir.so
LoadModule authz_core_module ` + apacheModules + `/mod_authz_core.so
StartServers 2
MinSpareServers 1
MaxSpareServers 2
ServerLimit 2
MaxRequestWorkers 2
User #65534
Group #65534
ServerName localhost
Listen %[2]s
DocumentRoot %[3]s
DirectoryIndex index.html
`

// phpFPMConf is php-fpm with two workers (pm = static), FastCGI on %[2]s, its pid file in %[1]s,
// %[3]s the lines of its global section. Root starts it, the workers run as nobody.
const phpFPMConf = `[global]
pid = %[1]s/php-fpm.pid
error_log = /proc/self/fd/2
log_level = notice
%[3]s[www]
user = 65534
group = 65534
listen = %[2]s
pm = static
pm.max_children = 2
php_admin_flag[output_buffering] = off
`

// phpFPMGraceful is phpFPMConf's global line that the README advises: how long SIGQUIT's
// graceful stop may take. At its default, 0, php-fpm's master follows its SIGQUIT to the workers
// with SIGTERM at once, which cuts their requests (TestPHPFPMControlTimeout).
const phpFPMGraceful = "process_control_timeout = 30s\n"

// fastCGIFront is nginx in front of php-fpm, as the pod's web server or a sidecar is: HTTP on
// %[2]s to FastCGI on %[3]s, every request to the script %[4]s; its files in %[1]s. nginx opens
// a connection to php-fpm for each request (no fastcgi_keep_conn), which php-fpm closes.
const fastCGIFront = `daemon off;
master_process on;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log stderr notice;
events { worker_connections 1024; }
http {
	client_body_temp_path %[1]s/client_body;
	proxy_temp_path %[1]s/proxy;
	fastcgi_temp_path %[1]s/fastcgi;
	uwsgi_temp_path %[1]s/uwsgi;
	scgi_temp_path %[1]s/scgi;
	access_log off;
	server {
		listen %[2]s;
		location / {
			fastcgi_pass %[3]s;
			fastcgi_param SCRIPT_FILENAME %[4]s;
			fastcgi_param REQUEST_METHOD $request_method;
			fastcgi_param QUERY_STRING $query_string;
		}
	}
}
`

// phpScript answers "ok", after ?ms= milliseconds when asked (the sleep resumed when a signal
// cuts it short), having first sent "started" when asked to wait.
const phpScript = `<?php
$ms = (int)($_GET['ms'] ?? 0);
if ($ms > 0) {
	header('X-Accel-Buffering: no');
	echo "started\n";
	flush();
	$end = microtime(true) + $ms / 1000;
	while (($left = $end - microtime(true)) > 0) {
		usleep((int)($left * 1e6));
	}
}
echo "ok\n";
`

// servedDir is a temporary directory whose files the server's workers, which run as nobody, may
// read: t.TempDir's parent is root's alone (0700).
func servedDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// startPHPFront runs nginx in front of php-fpm (FastCGI on fpmAddr, the script in dir), outside
// drainit, as the test's own child, and returns the address it serves HTTP on. It is stopped
// (SIGQUIT) at the test's end.
func startPHPFront(t *testing.T, dir, fpmAddr string) string {
	t.Helper()
	nginx := lookProgram(t, "nginx", "nginx-light")
	front, conf := testenv.FreeLoopbackAddr(t), filepath.Join(dir, "front.conf")
	writeConfig(t, conf, fmt.Sprintf(fastCGIFront, dir, front, fpmAddr, filepath.Join(dir, "index.php")))
	log := lines.New("nginx")
	cmd := exec.Command(nginx, "-c", conf, "-p", dir, "-e", "stderr")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-done:
		case <-time.After(waitTimeout):
			t.Errorf("nginx in front of php-fpm (pid %d) still ran %s after its SIGQUIT", cmd.Process.Pid, waitTimeout)
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("nginx in front of php-fpm:\n%s", log.Tail(30))
		}
	})
	return front
}

// TestAdaptiveAutoPreFork: pre-fork servers from Debian under drainit with --drain-quiet auto,
// as the README advises them (--forward child: their masters stop their workers): gunicorn with
// two workers on a flask app, nginx with two workers, Apache httpd's prefork MPM with two
// children serving a file itself, and php-fpm with two workers behind nginx (run by the test,
// outside drainit, as a pod's web server in front of php-fpm is: the load is HTTP to it, and it
// opens a FastCGI connection to php-fpm a request). The listener their master opened and its
// workers share is found (its holders are the master and the workers), the drain ends quiet
// after the traffic stops, no request fails, every worker is stopped and reaped by its master,
// nothing is left for drainit to kill, and drainit exits with the app's 0. The host's network
// namespace is shared: the drain counts with sock-diag, from the history of the app's listeners.
// (httpd's event MPM: TestAdaptiveAutoBesideASidecar.)
func TestAdaptiveAutoPreFork(t *testing.T) {
	requireRoot(t)
	for _, c := range []struct {
		name    string
		stopSig string
		argv    func(t *testing.T, dir, addr string) []string
		workers int    // the workers its configuration asks for, each a child of the app
		booted  string // the line the app writes as each worker starts
		pidFile string // its master's, in dir, which it removes as it ends its stop
		// front, when set, starts what the load goes through (outside drainit) and returns its
		// address; else the load goes to the app's own.
		front func(t *testing.T, dir, addr string) string
	}{
		{name: "gunicorn", stopSig: "TERM", workers: 2, booted: "Booting worker with pid", argv: func(t *testing.T, dir, addr string) []string {
			gunicorn := lookProgram(t, "gunicorn", "gunicorn")
			writeConfig(t, filepath.Join(dir, "app.py"), "from flask import Flask\napp = Flask(__name__)\n@app.route('/')\ndef ok():\n    return 'ok'\n")
			return []string{gunicorn, "--chdir", dir, "-w", "2", "-b", addr, "--graceful-timeout", "10", "app:app"}
		}},
		{name: "nginx", stopSig: "QUIT", workers: 2, pidFile: "nginx.pid", argv: func(t *testing.T, dir, addr string) []string {
			nginx := lookProgram(t, "nginx", "nginx-light")
			writeConfig(t, filepath.Join(dir, "nginx.conf"), fmt.Sprintf(preForkNginx, dir, addr))
			return []string{nginx, "-c", filepath.Join(dir, "nginx.conf"), "-p", dir, "-e", "stderr"}
		}},
		{name: "apache2-prefork", stopSig: "WINCH", workers: 2, pidFile: "httpd.pid", argv: func(t *testing.T, dir, addr string) []string {
			apache := lookProgram(t, "apache2", "apache2-bin")
			if _, err := os.Stat(filepath.Join(apacheModules, "mod_mpm_prefork.so")); err != nil {
				testenv.SkipUnlessCI(t, "needs Debian's httpd modules (apt-get install apache2-bin): "+err.Error())
			}
			writeConfig(t, filepath.Join(dir, "index.html"), "ok\n")
			writeConfig(t, filepath.Join(dir, "httpd.conf"), fmt.Sprintf(preForkApache, dir, addr, dir))
			return []string{apache, "-f", filepath.Join(dir, "httpd.conf"), "-DFOREGROUND"}
		}},
		{name: "php-fpm", stopSig: "QUIT", workers: 2, pidFile: "php-fpm.pid", argv: func(t *testing.T, dir, addr string) []string {
			fpm := lookProgram(t, "php-fpm8.2", "php8.2-fpm")
			writeConfig(t, filepath.Join(dir, "index.php"), phpScript)
			writeConfig(t, filepath.Join(dir, "php-fpm.conf"), fmt.Sprintf(phpFPMConf, dir, addr, phpFPMGraceful))
			return []string{fpm, "-F", "-y", filepath.Join(dir, "php-fpm.conf")}
		}, front: startPHPFront},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			const rate, warmup, d = 100, 3 * time.Second, 300 * time.Millisecond
			dir := servedDir(t)
			addr := testenv.FreeLoopbackAddr(t)
			argv := c.argv(t, dir, addr)
			url := "http://" + addr + "/"
			if c.front != nil {
				url = "http://" + c.front(t, dir, addr) + "/"
			}
			r := start(t, spec{mode: pid1, app: argv, args: []string{"--forward", "child", "--stop-signal", c.stopSig,
				"--drain", "adaptive", "--drain-quiet", "auto", "--drain-max", "10s", "--grace-period", "30s"}})
			waitUntil(t, waitTimeout, c.name+" answers", func() bool { return get(url).status == http.StatusOK })
			app := r.appPID()
			waitUntil(t, waitTimeout, fmt.Sprintf("%s's %d workers", c.name, c.workers), func() bool {
				return len(proc.Children("/proc", app)) == c.workers
			})

			l := loadThroughStop(url, rate, warmup, d, func() { r.signal(syscall.SIGTERM) })
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
			if c.booted != "" {
				if n := len(slices.DeleteFunc(r.stderr.Texts(), func(l string) bool { return !strings.Contains(l, c.booted) })); n != c.workers {
					t.Errorf("%d workers booted, want %d", n, c.workers)
				}
			}
			if status := r.checkCleanEnd(t, st); status != 0 {
				t.Errorf("%s exited %d, want 0\n%s", c.name, status, r.dump())
			}
			for _, e := range r.logs() {
				if e.str("level") == "warn" || e.str("level") == "error" {
					t.Errorf("drainit warned: %v", e)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, c.pidFile)); c.pidFile != "" && err == nil {
				t.Errorf("%s's pid file is still there: its master did not finish its stop", c.name)
			}
		})
	}
}

// TestPHPFPMControlTimeout: what php-fpm's graceful stop needs beyond the README's
// --stop-signal QUIT --forward child. On SIGQUIT its master passes SIGQUIT on to its workers,
// each of which finishes its request and exits, and sends them SIGTERM after
// process_control_timeout. At the default, 0, that SIGTERM follows at once: the request in
// flight is cut (its client, through nginx, gets the start of its answer and then an early end,
// as with SIGTERM, php-fpm's fast stop). With process_control_timeout set, the request is
// answered in full and php-fpm exits then.
func TestPHPFPMControlTimeout(t *testing.T) {
	requireRoot(t)
	const took = 1500 * time.Millisecond // the request's own time
	for _, c := range []struct {
		name, global string
		finished     bool
	}{
		{"default", "", false},
		{"process_control_timeout", phpFPMGraceful, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			fpm := lookProgram(t, "php-fpm8.2", "php8.2-fpm")
			dir := servedDir(t)
			addr := testenv.FreeLoopbackAddr(t)
			writeConfig(t, filepath.Join(dir, "index.php"), phpScript)
			writeConfig(t, filepath.Join(dir, "php-fpm.conf"), fmt.Sprintf(phpFPMConf, dir, addr, c.global))
			front := startPHPFront(t, dir, addr)
			r := start(t, spec{mode: pid1, app: []string{fpm, "-F", "-y", filepath.Join(dir, "php-fpm.conf")},
				args: []string{"--forward", "child", "--stop-signal", "QUIT", "--drain-delay", "0", "--grace-period", "30s"}})
			waitUntil(t, waitTimeout, "php-fpm answers", func() bool { return get("http://"+front+"/").status == http.StatusOK })

			// A request in flight: php-fpm's worker has begun its answer, and takes its time.
			begun := time.Now()
			resp, err := oneShot.Get(fmt.Sprintf("http://%s/?ms=%d", front, took.Milliseconds()))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body := bufio.NewReader(resp.Body)
			if first, err := body.ReadString('\n'); err != nil || first != "started\n" || resp.StatusCode != http.StatusOK {
				t.Fatalf("the slow request: status %d, %q, %v: want 200, \"started\"", resp.StatusCode, first, err)
			}
			sent := time.Now()
			r.signal(syscall.SIGTERM)
			rest, err := io.ReadAll(body)
			ended := time.Now()
			st := r.wait(waitTimeout)
			stop := only(t, r, "stop signal sent")
			exited := only(t, r, "app exited")
			t.Logf("the request in flight ended %s after the trigger (%s after it began): %q, %v; %v",
				ended.Sub(sent), ended.Sub(begun), rest, err, exited)

			if stop.str("signal") != "SIGQUIT" {
				t.Errorf("stop signal %q, want SIGQUIT", stop.str("signal"))
			}
			answered := err == nil && string(rest) == "ok\n"
			switch {
			case c.finished && (!answered || ended.Sub(begun) < took):
				t.Errorf("the request in flight: %q, %v after %s, want its whole answer after its %s\n%s", rest, err, ended.Sub(begun), took, r.dump())
			case !c.finished && answered:
				t.Errorf("the request in flight was answered in full: process_control_timeout 0 no longer cuts it (the README says it does)")
			case !c.finished && ended.Sub(sent) > dumpSlack:
				t.Errorf("the request in flight was cut %s after the trigger, want at once (within %s)", ended.Sub(sent), dumpSlack)
			}
			if status := r.checkCleanEnd(t, st); status != 0 {
				t.Errorf("php-fpm exited %d, want 0\n%s", status, r.dump())
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
