package cluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/integration/testbin"
	"github.com/drainit/drainit/internal/proc"
	"github.com/drainit/drainit/internal/testenv"
)

const (
	token    = "drainit-cluster-test"
	nodeIP   = "10.77.0.1" // on the namespace's loopback: an endpoint may not be 127.0.0.0/8
	nodeName = "node1"
	quiet    = 500 * time.Millisecond
)

// cluster is a control plane and kube-proxy in a network namespace of their own.
type cluster struct {
	t      *testing.T
	dir    string
	ns     string // the namespace's name (ip netns)
	procs  []*prog
	client *http.Client
	bins   testbin.Paths
}

// start brings the cluster up, or ends the test: a skip when it cannot run here (a failure under
// CI=true).
func start(t *testing.T) *cluster {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.SkipUnlessCI(t, "needs root: network namespaces and kube-proxy's iptables rules")
	}
	for _, name := range []string{"ip", "etcd", "iptables-restore"} {
		if _, err := testenv.LookPath(name); err != nil {
			testenv.SkipUnlessCI(t, fmt.Sprintf("%v (Debian: apt-get install --no-install-recommends iproute2 etcd-server iptables)", err))
		}
	}
	bins, err := testbin.Build()
	if err != nil {
		t.Fatal(err)
	}
	k8s := map[string]string{}
	for _, name := range []string{"kube-apiserver", "kube-controller-manager", "kube-proxy"} {
		out, err := exec.Command(filepath.Join(moduleRoot(), "scripts", "kubelet.sh"), name).Output()
		if err != nil {
			t.Fatalf("scripts/kubelet.sh %s: %v", name, err)
		}
		k8s[name] = strings.TrimSpace(string(out))
	}
	c := &cluster{t: t, dir: t.TempDir(), ns: fmt.Sprintf("drainit-cluster-%d", os.Getpid()), bins: bins}
	c.ip("netns", "add", c.ns)
	t.Cleanup(c.stop)
	c.ip("-n", c.ns, "link", "set", "lo", "up")
	c.ip("-n", c.ns, "addr", "add", nodeIP+"/32", "dev", "lo")
	// ClusterIPs are routed through loopback, where kube-proxy's OUTPUT rules translate them.
	c.ip("-n", c.ns, "route", "add", "10.96.0.0/24", "dev", "lo")
	c.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext:     c.dial,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the apiserver's own self-signed certificate
	}}
	c.writeKeys()
	c.run("etcd", "etcd", "--data-dir", filepath.Join(c.dir, "etcd"),
		"--listen-client-urls", "http://127.0.0.1:2379", "--advertise-client-urls", "http://127.0.0.1:2379",
		"--listen-peer-urls", "http://127.0.0.1:2380")
	c.run("kube-apiserver", k8s["kube-apiserver"], "--etcd-servers=http://127.0.0.1:2379",
		"--service-cluster-ip-range=10.96.0.0/24", "--secure-port=6443", "--bind-address=127.0.0.1",
		"--advertise-address="+nodeIP, "--cert-dir="+filepath.Join(c.dir, "certs"),
		"--token-auth-file="+filepath.Join(c.dir, "tokens.csv"), "--authorization-mode=AlwaysAllow",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+filepath.Join(c.dir, "sa.pub"),
		"--service-account-signing-key-file="+filepath.Join(c.dir, "sa.key"),
		"--disable-admission-plugins=ServiceAccount")
	c.waitFor("the apiserver to be ready", 60*time.Second, func() bool {
		code, _, err := c.api("GET", "/readyz", "")
		return err == nil && code == 200
	})
	c.run("kube-controller-manager", k8s["kube-controller-manager"], "--kubeconfig="+c.kubeconfig(),
		"--controllers=endpointslice", "--leader-elect=false", "--secure-port=0")
	c.must("POST", "/api/v1/nodes", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"`+nodeName+`"}}`)
	// kube-proxy takes the node's IP from its status, which a kubelet would write, and waits ~30 s
	// for one before it assumes loopback.
	c.must("PATCH", "/api/v1/nodes/"+nodeName+"/status", `{"status":{"addresses":[{"type":"InternalIP","address":"`+nodeIP+`"}]}}`)
	proxyConf := filepath.Join(c.dir, "proxy.yaml")
	writeFile(t, proxyConf, fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: %s}
mode: iptables
hostnameOverride: %s
conntrack: {maxPerCore: 0}
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
`, c.kubeconfig(), nodeName))
	c.run("kube-proxy", k8s["kube-proxy"], "--config="+proxyConf)
	return c
}

func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (c *cluster) ip(args ...string) {
	c.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		c.t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// writeKeys writes the service-account key pair and the token file the apiserver needs.
func (c *cluster) writeKeys() {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		c.t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		c.t.Fatal(err)
	}
	writeFile(c.t, filepath.Join(c.dir, "sa.key"), string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})))
	writeFile(c.t, filepath.Join(c.dir, "sa.pub"), string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})))
	writeFile(c.t, filepath.Join(c.dir, "tokens.csv"), token+`,admin,admin,"system:masters"`+"\n")
}

func (c *cluster) kubeconfig() string {
	p := filepath.Join(c.dir, "kubeconfig")
	if _, err := os.Stat(p); err != nil {
		writeFile(c.t, p, `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: `+token+`}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`)
	}
	return p
}

// prog is a program run in the namespace; exited is closed once it has been waited for.
type prog struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// run starts a program in the namespace, its output in NAME.log; stop ends it. `ip netns exec`
// execs the program itself, so the process is the program's.
func (c *cluster) run(name, path string, args ...string) *prog {
	c.t.Helper()
	f, err := os.Create(filepath.Join(c.dir, name+".log"))
	if err != nil {
		c.t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command("ip", append([]string{"netns", "exec", c.ns, path}, args...)...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("starting %s: %v", name, err)
	}
	p := &prog{cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	c.procs = append(c.procs, p)
	return p
}

func (c *cluster) log(name string) string {
	b, _ := os.ReadFile(filepath.Join(c.dir, name+".log"))
	return string(b)
}

// stop ends every program in reverse order, kube-proxy's rules with the namespace. A program's
// descendants are killed first and by pid: drainit starts its app in a session of its own, which
// killing drainit's process group would miss.
func (c *cluster) stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		select {
		case <-p.exited:
		default:
			killTree(p.cmd.Process.Pid)
			<-p.exited
		}
	}
	if c.t.Failed() {
		for _, n := range []string{"kube-apiserver", "kube-controller-manager", "kube-proxy"} {
			l := c.log(n)
			if len(l) > 3000 {
				l = l[len(l)-3000:]
			}
			c.t.Logf("%s's log, the end:\n%s", n, l)
		}
	}
	_ = exec.Command("ip", "netns", "del", c.ns).Run()
}

// killTree kills pid's descendants, deepest first, then pid; each is stopped before its children
// are listed, so that none can start another meanwhile.
func killTree(pid int) {
	_ = syscall.Kill(pid, syscall.SIGSTOP)
	for _, child := range proc.Children("/proc", pid) {
		killTree(child)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

// dial connects from inside the namespace: the socket is made on a thread that has entered it,
// and that thread ends with its goroutine rather than go back to the scheduler.
func (c *cluster) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	type result struct {
		conn net.Conn
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread is the namespace's now
		fd, err := unix.Open("/var/run/netns/"+c.ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			err = unix.Setns(fd, unix.CLONE_NEWNET)
			unix.Close(fd)
		}
		if err != nil {
			ch <- result{nil, fmt.Errorf("entering %s: %w", c.ns, err)}
			return
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, network, addr)
		ch <- result{conn, err}
	}()
	r := <-ch
	return r.conn, r.err
}

// api calls the apiserver; path may also be a URL of a server in the namespace.
func (c *cluster) api(method, path, body string) (int, []byte, error) {
	url := path
	if strings.HasPrefix(path, "/") {
		url = "https://127.0.0.1:6443" + path
	}
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if method == "PATCH" {
		req.Header.Set("Content-Type", "application/merge-patch+json")
	} else if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func (c *cluster) must(method, path, body string) []byte {
	c.t.Helper()
	code, b, err := c.api(method, path, body)
	if err != nil || code/100 != 2 {
		c.t.Fatalf("%s %s: %d %v\n%s", method, path, code, err, b)
	}
	return b
}

func (c *cluster) waitFor(what string, within time.Duration, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("waited %v for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// service makes the Service web (port 80 to each pod's port named http) and returns its IP.
func (c *cluster) service() string {
	b := c.must("POST", "/api/v1/namespaces/default/services",
		`{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"selector":{"app":"web"},"ports":[{"port":80,"targetPort":"http"}]}}`)
	var svc struct {
		Spec struct {
			ClusterIP string `json:"clusterIP"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(b, &svc); err != nil || svc.Spec.ClusterIP == "" {
		c.t.Fatalf("the Service's ClusterIP: %v\n%s", err, b)
	}
	return svc.Spec.ClusterIP
}

// pod makes a pod object on the node, serving on port, and writes its status ready, as the
// kubelet would once its containers run and its readiness probe passes.
func (c *cluster) pod(name string, port int) {
	c.must("POST", "/api/v1/namespaces/default/pods", fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod",
		"metadata":{"name":%q,"labels":{"app":"web"}},
		"spec":{"nodeName":%q,"terminationGracePeriodSeconds":30,
		"containers":[{"name":"app","image":"drainit","ports":[{"name":"http","containerPort":%d}]}]}}`, name, nodeName, port))
	c.must("PATCH", "/api/v1/namespaces/default/pods/"+name+"/status", fmt.Sprintf(`{"status":{"phase":"Running",
		"podIP":%q,"podIPs":[{"ip":%q}],"conditions":[{"type":"Ready","status":"True"},{"type":"ContainersReady","status":"True"}]}}`, nodeIP, nodeIP))
}

// notReady writes the pod's Ready condition false, as the kubelet does once the readiness probe
// of drainit's /readyz (503 from the first trigger) has failed failureThreshold times.
func (c *cluster) notReady(name string) {
	c.must("PATCH", "/api/v1/namespaces/default/pods/"+name+"/status",
		`{"status":{"conditions":[{"type":"Ready","status":"False"},{"type":"ContainersReady","status":"False"}]}}`)
}

// load opens a new connection to url every 10 ms, one request each, and records when each began
// and which pod answered it, or that it failed.
type load struct {
	mu     sync.Mutex
	served map[string][]time.Time
	failed []time.Time
	errs   []string // why each failed, with when it began
	stop   chan struct{}
	once   sync.Once
	done   sync.WaitGroup
}

func (c *cluster) load(url string) *load {
	l := &load{served: map[string][]time.Time{}, stop: make(chan struct{})}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DialContext: c.dial, DisableKeepAlives: true}}
	l.done.Add(1)
	go func() {
		defer l.done.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		var reqs sync.WaitGroup
		defer reqs.Wait()
		for {
			select {
			case <-l.stop:
				return
			case <-tick.C:
			}
			reqs.Add(1)
			go func() {
				defer reqs.Done()
				began := time.Now()
				resp, err := client.Get(url)
				var who []byte
				if err == nil {
					who, err = io.ReadAll(resp.Body)
					resp.Body.Close()
					if err == nil && resp.StatusCode != 200 {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				l.mu.Lock()
				defer l.mu.Unlock()
				if err != nil {
					l.failed = append(l.failed, began)
					l.errs = append(l.errs, fmt.Sprintf("%s: %v", began.Format("15:04:05.000"), err))
					return
				}
				w := string(bytes.TrimSpace(who))
				l.served[w] = append(l.served[w], began)
			}()
		}
	}()
	return l
}

// end stops the load and waits for its requests; a second call does nothing.
func (l *load) end() {
	l.once.Do(func() { close(l.stop) })
	l.done.Wait()
}

// count is how many requests that began after t who ("" for anyone) served, and how many failed.
func (l *load) count(who string, after time.Time) (served, failed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for w, ats := range l.served {
		if who != "" && w != who {
			continue
		}
		for _, at := range ats {
			if at.After(after) {
				served++
			}
		}
	}
	for _, at := range l.failed {
		if at.After(after) {
			failed++
		}
	}
	return
}

// total is how many requests were served.
func (l *load) total() int {
	n, _ := l.count("", time.Time{})
	return n
}

// last is when the last request began that who (or, with other, anyone but who) served.
func (l *load) last(who string, other bool) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	var last time.Time
	for w, ats := range l.served {
		if (w == who) == other {
			continue
		}
		for _, at := range ats {
			if at.After(last) {
				last = at
			}
		}
	}
	return last
}

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup() // the binaries Build put in a temporary directory
	os.Exit(code)
}
