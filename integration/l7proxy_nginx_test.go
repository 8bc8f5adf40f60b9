package integration

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drainit/drainit/integration/lines"
	"github.com/drainit/drainit/internal/proc"
)

// nginxProxy is Debian's nginx as the node's proxy of TestAdaptiveDrainBehindPoolingProxy, as
// ingress-nginx runs it: upstream keepalive (HTTP/1.1 to the pods, the Connection header
// cleared), no retries (proxy_next_upstream off, so that a request routed to a stopped pod
// reaches the client as a 502), and no passive health check (max_fails=0, as ingress-nginx's
// Lua balancer picks endpoints without one; with nginx's default max_fails=1 the first refused
// connection takes pod1 out for fail_timeout, 10 s, and the loss stops at one request). Open
// source nginx removes an upstream server only by a reload: the removal is the configuration
// without pod1 and SIGHUP to the master, whose new workers route to pod2 alone while the old
// ones finish their requests and close their idle connections to the pods.
type nginxProxy struct {
	bin string
	dir string
	pid int        // the master, PID 1 of its namespace
	log *lines.Log // its stdout: the access log, one REQ line a request
}

// nginxPoolingConf is the proxy's configuration: its files in %[1]s, the upstream servers %[2]s.
// $msec is when nginx logged the request and $request_time how long it took since its first
// byte: their difference is when nginx accepted it.
const nginxPoolingConf = `daemon off;
master_process on;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log notice;
events { worker_connections 1024; }
http {
	client_body_temp_path %[1]s/client_body;
	proxy_temp_path %[1]s/proxy;
	fastcgi_temp_path %[1]s/fastcgi;
	uwsgi_temp_path %[1]s/uwsgi;
	scgi_temp_path %[1]s/scgi;
	log_format routed 'REQ $msec $request_time $upstream_addr $status';
	access_log /dev/stdout routed;
	map $upstream_addr $pod {
		%[3]s pod1;
		%[4]s pod2;
	}
	upstream be {
%[2]s		keepalive 16;
	}
	server {
		listen unix:%[1]s/fe.sock;
		location / {
			proxy_pass http://be;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_next_upstream off;
			add_header X-Server $pod;
		}
	}
}
`

// configure writes the configuration with the pods nums as the upstream's servers.
func (x *nginxProxy) configure(t *testing.T, nums ...int) string {
	t.Helper()
	var servers strings.Builder
	for _, num := range nums {
		servers.WriteString("\t\tserver " + poolingPodAddr(num) + " max_fails=0;\n")
	}
	cfg := filepath.Join(x.dir, "nginx.conf")
	writeConfig(t, cfg, fmt.Sprintf(nginxPoolingConf, x.dir, servers.String(), poolingPodAddr(1), poolingPodAddr(2)))
	return cfg
}

func (x *nginxProxy) start(t *testing.T, dir string) int {
	t.Helper()
	x.dir, x.log = dir, lines.New("nginx")
	cfg := x.configure(t, 1, 2)
	t.Cleanup(func() {
		if t.Failed() {
			errs, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Logf("nginx's error log:\n%s", lines.Tail(strings.Split(strings.TrimSpace(string(errs)), "\n"), 30))
		}
	})
	// -e: the log nginx opens before it has read its configuration (1.19.5+), else /var/log.
	x.pid = startNetnsPod(t, "node", x.log, x.bin, "-c", cfg, "-p", dir+"/", "-e", filepath.Join(dir, "error.log"))
	waitUntil(t, waitTimeout, "nginx listens on its frontend", func() bool {
		c, err := net.Dial("unix", filepath.Join(dir, "fe.sock"))
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return x.pid
}

// removePod1 reloads nginx without pod1 (SIGHUP to the master) and returns once no worker of
// the old configuration accepts requests. That is about 100 ms after the SIGHUP, not at once:
// the master starts the new workers, sleeps 100 ms ("allow new processes to start",
// ngx_master_process_cycle), and only then sends the old ones SIGQUIT; until then both accept
// on the shared listener, and the old ones route to pod1 (seen: pod1's last request accepted
// up to 103 ms after the SIGHUP, the new worker up within 3 ms). An old worker that has taken its
// SIGQUIT has closed its listener and its idle connections to the pods, and renamed itself
// "worker process is shutting down"; it exits once its requests are answered.
func (x *nginxProxy) removePod1(t *testing.T) {
	t.Helper()
	old := proc.Children("/proc", x.pid)
	x.configure(t, 2)
	if err := syscall.Kill(x.pid, syscall.SIGHUP); err != nil {
		t.Fatalf("nginx's reload: SIGHUP to its master (pid %d): %v", x.pid, err)
	}
	waitUntil(t, waitTimeout, "nginx's old workers stopped accepting after the reload without pod1", func() bool {
		for _, p := range old {
			cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline")
			if err == nil && !bytes.Contains(cmdline, []byte("shutting down")) {
				return false
			}
		}
		return len(proc.Children("/proc", x.pid)) > 0
	})
}

// lost: 502, whether nginx's connection to the pod was refused (its app had stopped: 2 a run,
// seen) or unreachable (its network namespace gone with drainit: the ~200 others), or a pooled
// connection was closed under the request.
func (x *nginxProxy) lost() []int { return []int{http.StatusBadGateway} }

// routed reads nginx's access log: "REQ <unix seconds>.<ms> <request time> <upstream> <status>".
func (x *nginxProxy) routed(t *testing.T) []routedReq {
	t.Helper()
	pods := map[string]string{poolingPodAddr(1): "pod1", poolingPodAddr(2): "pod2"}
	var out []routedReq
	for _, l := range x.log.Texts() {
		f := strings.Fields(l)
		if len(f) != 5 || f[0] != "REQ" {
			continue
		}
		end, err := unixMillis(f[1])
		took, err2 := strconv.ParseFloat(f[2], 64)
		if err != nil || err2 != nil {
			t.Fatalf("nginx's access log line %q: no time: %v, %v", l, err, err2)
		}
		out = append(out, routedReq{at: end.Add(-time.Duration(took * float64(time.Second))), server: pods[f[3]], status: f[4]})
	}
	return out
}
