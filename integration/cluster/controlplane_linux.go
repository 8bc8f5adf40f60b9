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
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
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
	"github.com/drainit/drainit/integration/testenv"
	"github.com/drainit/drainit/internal/proc"
)

const token = "drainit-cluster-test" // the admin's bearer token (tokens.csv, the kubeconfig)

const (
	// NodeIP is the node's address, the pods' (hostNetwork) and the one kube-proxy routes to: on
	// the namespace's loopback, since an endpoint may not be in 127.0.0.0/8.
	NodeIP = "10.77.0.1"
	// NodeName is the node's name, kube-proxy's and a kubelet's that registers as it.
	NodeName = "node1"
)

// Cluster is a control plane and kube-proxy in a network namespace of their own.
type Cluster struct {
	T      testing.TB
	Dir    string        // the run's directory: configuration, keys, each program's NAME.log
	NS     string        // the namespace's name (ip netns; /var/run/netns/NS)
	Bins   testbin.Paths // drainit and the test app
	procs  []*Prog
	client *http.Client
}

// Start brings the cluster up, or ends the test: a skip when it cannot run here (a failure under
// CI=true).
func Start(t testing.TB) *Cluster {
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
		if k8s[name], err = K8sCommand(name); err != nil {
			t.Fatal(err)
		}
	}
	c := &Cluster{T: t, Dir: t.TempDir(), NS: fmt.Sprintf("drainit-cluster-%d", os.Getpid()), Bins: bins}
	c.ip("netns", "add", c.NS)
	t.Cleanup(c.stop)
	c.ip("-n", c.NS, "link", "set", "lo", "up")
	c.ip("-n", c.NS, "addr", "add", NodeIP+"/32", "dev", "lo")
	// ClusterIPs are routed through loopback, where kube-proxy's OUTPUT rules translate them, from
	// the node's address: a connection from 127.0.0.1 could not be answered by a pod with a network
	// of its own.
	c.ip("-n", c.NS, "route", "add", "10.96.0.0/24", "dev", "lo", "src", NodeIP)
	c.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext:     c.Dial,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the apiserver's own self-signed certificate
	}}
	c.writeKeys()
	c.Run("etcd", "etcd", "--data-dir", filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls", "http://127.0.0.1:2379", "--advertise-client-urls", "http://127.0.0.1:2379",
		"--listen-peer-urls", "http://127.0.0.1:2380")
	c.Run("kube-apiserver", k8s["kube-apiserver"], "--etcd-servers=http://127.0.0.1:2379",
		"--service-cluster-ip-range=10.96.0.0/24", "--secure-port=6443", "--bind-address=127.0.0.1",
		"--advertise-address="+NodeIP, "--cert-dir="+filepath.Join(c.Dir, "certs"),
		"--token-auth-file="+filepath.Join(c.Dir, "tokens.csv"), "--authorization-mode=AlwaysAllow",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+filepath.Join(c.Dir, "sa.pub"),
		"--service-account-signing-key-file="+filepath.Join(c.Dir, "sa.key"),
		"--disable-admission-plugins=ServiceAccount")
	c.WaitFor("the apiserver to be ready", 60*time.Second, func() bool {
		code, _, err := c.API("GET", "/readyz", "")
		return err == nil && code == 200
	})
	c.Run("kube-controller-manager", k8s["kube-controller-manager"], "--kubeconfig="+c.Kubeconfig(),
		"--controllers=endpointslice", "--leader-elect=false", "--secure-port=0")
	c.Must("POST", "/api/v1/nodes", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"`+NodeName+`"}}`)
	// kube-proxy takes the node's IP from its status, which a kubelet would write, and waits ~30 s
	// for one before it assumes loopback.
	c.Must("PATCH", "/api/v1/nodes/"+NodeName+"/status", `{"status":{"addresses":[{"type":"InternalIP","address":"`+NodeIP+`"}]}}`)
	proxyConf := filepath.Join(c.Dir, "proxy.yaml")
	writeFile(t, proxyConf, fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: %s}
mode: iptables
hostnameOverride: %s
conntrack: {maxPerCore: 0}
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
`, c.Kubeconfig(), NodeName))
	c.Run("kube-proxy", k8s["kube-proxy"], "--config="+proxyConf)
	return c
}

// K8sCommand is the path of a Kubernetes command (kubelet, kube-apiserver,
// kube-controller-manager, kube-proxy) as scripts/kubelet.sh builds it from tools/kubelet: the
// first time in minutes, then from its cache. `make test` builds them before the tests, outside
// their timeout.
func K8sCommand(name string) (string, error) {
	script := filepath.Join(testenv.ModuleRoot(), "scripts", "kubelet.sh")
	var stderr bytes.Buffer
	cmd := exec.Command(script, name)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("building %s (%s): %w\n%s", name, script, err, stderr.Bytes())
	}
	return strings.TrimSpace(string(out)), nil
}

func writeFile(t testing.TB, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (c *Cluster) ip(args ...string) {
	c.T.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		c.T.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// writeKeys writes the service-account key pair and the token file the apiserver needs.
func (c *Cluster) writeKeys() {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		c.T.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		c.T.Fatal(err)
	}
	writeFile(c.T, filepath.Join(c.Dir, "sa.key"), string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})))
	writeFile(c.T, filepath.Join(c.Dir, "sa.pub"), string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})))
	writeFile(c.T, filepath.Join(c.Dir, "tokens.csv"), token+`,admin,admin,"system:masters"`+"\n")
}

// Kubeconfig is the path of a kubeconfig for the apiserver, with an admin's token.
func (c *Cluster) Kubeconfig() string {
	p := filepath.Join(c.Dir, "kubeconfig")
	if _, err := os.Stat(p); err != nil {
		writeFile(c.T, p, `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: `+token+`}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`)
	}
	return p
}

// Prog is a program run in the namespace; Exited is closed once it has been waited for.
type Prog struct {
	Cmd    *exec.Cmd
	Exited chan struct{}
}

// Run starts a program in the namespace, its output in NAME.log; stop ends it. `ip netns exec`
// execs the program itself, so the process is the program's.
func (c *Cluster) Run(name, path string, args ...string) *Prog {
	c.T.Helper()
	f, err := os.Create(filepath.Join(c.Dir, name+".log"))
	if err != nil {
		c.T.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command("ip", append([]string{"netns", "exec", c.NS, path}, args...)...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		c.T.Fatalf("starting %s: %v", name, err)
	}
	p := &Prog{Cmd: cmd, Exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.Exited)
	}()
	c.procs = append(c.procs, p)
	return p
}

// Log is what the program Run started as name has written so far.
func (c *Cluster) Log(name string) string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, name+".log"))
	return string(b)
}

// stop ends every program in reverse order, kube-proxy's rules with the namespace. A program's
// descendants are killed first and by pid: drainit starts its app in a session of its own, which
// killing drainit's process group would miss.
func (c *Cluster) stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		select {
		case <-p.Exited:
		default:
			killTree(p.Cmd.Process.Pid)
			<-p.Exited
		}
	}
	if c.T.Failed() {
		for _, n := range []string{"kube-apiserver", "kube-controller-manager", "kube-proxy"} {
			l := c.Log(n)
			if len(l) > 3000 {
				l = l[len(l)-3000:]
			}
			c.T.Logf("%s's log, the end:\n%s", n, l)
		}
	}
	_ = exec.Command("ip", "netns", "del", c.NS).Run()
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

// Dial connects from inside the namespace: the socket is made on a thread that has entered it,
// and that thread ends with its goroutine rather than go back to the scheduler.
func (c *Cluster) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	type result struct {
		conn net.Conn
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread is the namespace's now
		fd, err := unix.Open("/var/run/netns/"+c.NS, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			err = unix.Setns(fd, unix.CLONE_NEWNET)
			unix.Close(fd)
		}
		if err != nil {
			ch <- result{nil, fmt.Errorf("entering %s: %w", c.NS, err)}
			return
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, network, addr)
		ch <- result{conn, err}
	}()
	r := <-ch
	return r.conn, r.err
}

// API calls the apiserver; path may also be a URL of a server in the namespace.
func (c *Cluster) API(method, path, body string) (int, []byte, error) {
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

// Must calls the apiserver and ends the test unless it answers 2xx.
func (c *Cluster) Must(method, path, body string) []byte {
	c.T.Helper()
	code, b, err := c.API(method, path, body)
	if err != nil || code/100 != 2 {
		c.T.Fatalf("%s %s: %d %v\n%s", method, path, code, err, b)
	}
	return b
}

// WaitFor polls cond until it holds, and ends the test if it does not within the time given.
func (c *Cluster) WaitFor(what string, within time.Duration, cond func() bool) {
	c.T.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			c.T.Fatalf("waited %v for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Service makes the Service web (port 80 to each pod's port named http) and returns its IP.
func (c *Cluster) Service() string {
	b := c.Must("POST", "/api/v1/namespaces/default/services",
		`{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"selector":{"app":"web"},"ports":[{"port":80,"targetPort":"http"}]}}`)
	var svc struct {
		Spec struct {
			ClusterIP string `json:"clusterIP"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(b, &svc); err != nil || svc.Spec.ClusterIP == "" {
		c.T.Fatalf("the Service's ClusterIP: %v\n%s", err, b)
	}
	return svc.Spec.ClusterIP
}

// Pod makes a pod object on the node, serving on port, and writes its status ready, as the
// kubelet would once its containers run and its readiness probe passes.
func (c *Cluster) Pod(name string, port int) {
	c.Must("POST", "/api/v1/namespaces/default/pods", fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod",
		"metadata":{"name":%q,"labels":{"app":"web"}},
		"spec":{"nodeName":%q,"terminationGracePeriodSeconds":30,
		"containers":[{"name":"app","image":"drainit","ports":[{"name":"http","containerPort":%d}]}]}}`, name, NodeName, port))
	c.Must("PATCH", "/api/v1/namespaces/default/pods/"+name+"/status", fmt.Sprintf(`{"status":{"phase":"Running",
		"podIP":%q,"podIPs":[{"ip":%q}],"conditions":[{"type":"Ready","status":"True"},{"type":"ContainersReady","status":"True"}]}}`, NodeIP, NodeIP))
}

// NotReady writes the pod's Ready condition false, as the kubelet does once the readiness probe
// of drainit's /readyz (503 from the first trigger) has failed failureThreshold times.
func (c *Cluster) NotReady(name string) {
	c.Must("PATCH", "/api/v1/namespaces/default/pods/"+name+"/status",
		`{"status":{"conditions":[{"type":"Ready","status":"False"},{"type":"ContainersReady","status":"False"}]}}`)
}

// failure is a request that failed: when it began, and why.
type failure struct {
	began time.Time
	err   error
}

// A Load opens a new connection to a URL every 10 ms (or as a Poisson stream:
// PoissonLoadServedBy), one request each, and records when each began and which pod answered it,
// or that it failed.
type Load struct {
	mu     sync.Mutex
	served map[string][]time.Time
	failed []failure
	stop   chan struct{}
	once   sync.Once
	done   sync.WaitGroup
}

// routed waits until pods different pods have answered through the Service: until then its
// ClusterIP has no rules, and a connection to it is routed to loopback and times out.
func (c *Cluster) routed(url string, pods int) {
	c.T.Helper()
	client := &http.Client{Timeout: 200 * time.Millisecond, Transport: &http.Transport{DialContext: c.Dial, DisableKeepAlives: true}}
	seen := map[string]bool{}
	c.WaitFor(fmt.Sprintf("%d pods to answer through the Service", pods), 30*time.Second, func() bool {
		if resp, err := client.Get(url); err == nil {
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode == 200 {
				seen[string(b)] = true
			}
		}
		return len(seen) >= pods
	})
}

// Answer is what the server at ip:port answers ("ok PID" from the test app), asked directly,
// not through the Service, once it listens (within 30 s): a Load's records name pods by it.
func (c *Cluster) Answer(ip string, port int) string {
	c.T.Helper()
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DialContext: c.Dial, DisableKeepAlives: true}}
	var answer string
	c.WaitFor(fmt.Sprintf("an answer from %s:%d", ip, port), 30*time.Second, func() bool {
		resp, err := client.Get(fmt.Sprintf("http://%s:%d/", ip, port))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		answer = strings.TrimSpace(string(b))
		return err == nil && resp.StatusCode == 200
	})
	return answer
}

// LoadServedBy starts a Load on url, the Service's, from inside the namespace, a request every
// 10 ms, once the Service answers, and returns it when each of the pods that give answers has
// served more than 10 of its requests; End stops it.
func (c *Cluster) LoadServedBy(url string, answers ...string) *Load {
	c.T.Helper()
	return c.servedBy(url, func() time.Duration { return 10 * time.Millisecond }, answers)
}

// PoissonLoadServedBy is LoadServedBy with requests that begin as a Poisson stream at rate a
// second, as independent clients' do (the automatic quiet period's model).
func (c *Cluster) PoissonLoadServedBy(url string, rate float64, answers ...string) *Load {
	c.T.Helper()
	return c.servedBy(url, func() time.Duration {
		return time.Duration(mrand.ExpFloat64() / rate * float64(time.Second))
	}, answers)
}

func (c *Cluster) servedBy(url string, gap func() time.Duration, answers []string) *Load {
	c.T.Helper()
	c.routed(url, len(answers))
	l := c.load(url, gap)
	c.WaitFor("each pod to get connections through the Service", 30*time.Second, func() bool {
		for _, a := range answers {
			if n, _ := l.Count(a, time.Time{}); n <= 10 {
				return false
			}
		}
		return true
	})
	return l
}

// load starts a Load on url, each request gap after the one before on a schedule that does not
// drift: a request that could not begin on time begins at once.
func (c *Cluster) load(url string, gap func() time.Duration) *Load {
	l := &Load{served: map[string][]time.Time{}, stop: make(chan struct{})}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DialContext: c.Dial, DisableKeepAlives: true}}
	l.done.Add(1)
	go func() {
		defer l.done.Done()
		timer := time.NewTimer(0)
		defer timer.Stop()
		var reqs sync.WaitGroup
		defer reqs.Wait()
		next := time.Now()
		for {
			select {
			case <-l.stop:
				return
			case <-timer.C:
			}
			next = next.Add(gap())
			timer.Reset(time.Until(next))
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
					l.failed = append(l.failed, failure{began, err})
					return
				}
				w := string(bytes.TrimSpace(who))
				l.served[w] = append(l.served[w], began)
			}()
		}
	}()
	return l
}

// End stops the load and waits for its requests; a second call does nothing.
func (l *Load) End() {
	l.once.Do(func() { close(l.stop) })
	l.done.Wait()
}

// Count is how many requests that began after t who ("" for anyone) served, and how many failed.
func (l *Load) Count(who string, after time.Time) (served, failed int) {
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
	return served, l.failedIf(func(f failure) bool { return f.began.After(after) })
}

// FailedBy is how many requests failed that began at t or before: for the Service's last ready
// pod, with t its last connection, those that were routed to it (after it, connections fail at
// kube-proxy once the Service has no endpoint).
func (l *Load) FailedBy(t time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failedIf(func(f failure) bool { return !f.began.After(t) })
}

// Refused is how many requests that began after t a server refused or reset: connections that
// reached a pod whose app no longer listened, not ones that no route took anywhere.
func (l *Load) Refused(after time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failedIf(func(f failure) bool {
		return f.began.After(after) && (errors.Is(f.err, syscall.ECONNREFUSED) || errors.Is(f.err, syscall.ECONNRESET))
	})
}

// failedIf counts the failed requests that match; l.mu is held.
func (l *Load) failedIf(match func(failure) bool) int {
	n := 0
	for _, f := range l.failed {
		if match(f) {
			n++
		}
	}
	return n
}

// Errs is why each failed request failed, with when it began.
func (l *Load) Errs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []string
	for _, f := range l.failed {
		errs = append(errs, fmt.Sprintf("%s: %v", f.began.Format("15:04:05.000"), f.err))
	}
	return errs
}

// Last is when the last request began that who served.
func (l *Load) Last(who string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	var last time.Time
	for _, at := range l.served[who] {
		if at.After(last) {
			last = at
		}
	}
	return last
}
