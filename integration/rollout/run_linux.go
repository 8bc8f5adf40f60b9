package rollout

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/drainit/drainit/integration/kubelet"
	"github.com/drainit/drainit/integration/lines"
	"github.com/drainit/drainit/integration/pod"
	"github.com/drainit/drainit/integration/testenv"
)

// Config is how runs are set up. Zero fields take the defaults in DefaultConfig, except the paths
// to drainit and testapp, which are required.
type Config struct {
	Drainit, Testapp string // the binaries under test
	Tini, DumbInit   string // "": looked up in PATH when a scenario needs them
	Nginx            string // "": NginxPath, when a scenario needs it

	Pods             int           // pods behind the balancer; the first one is stopped
	Grace            time.Duration // the pods' terminationGracePeriodSeconds
	AppDelay         time.Duration // how long each request takes in the app
	Rate             float64       // new-connection requests per second
	KeepAliveClients int           // keep-alive clients …
	KeepAliveRate    float64       // … sharing this many requests per second
	Warmup           time.Duration // load before the deletion
	Tail             time.Duration // load after the pod is gone and the propagation delay over
	RequestTimeout   time.Duration
	// CutAfter: a request a pod closes unanswered after having it this long was cut in flight;
	// sooner, it was dropped on arrival (see Balancer.CutAfter). Default: a fifth of AppDelay.
	CutAfter time.Duration
	// Poisson: the new-connection load comes as a Poisson stream (Load.Poisson), as the
	// automatic quiet period assumes and real clients make; otherwise at even intervals.
	Poisson bool
	// HostNetwork: the pods share the harness's network namespace, as hostNetwork pods do, and
	// drainit watches with sock_diag; otherwise each pod has its own (netns_linux.go), as on a
	// node, and drainit counts with the namespace's PassiveOpens counter.
	HostNetwork bool
	// Sidecar: each pod's network namespace also holds a listener of another process's (the
	// harness's), with traffic of its own (SidecarRate new connections a second) for the pod's
	// whole life, as a mesh sidecar's or an exporter's: drainit's namespace is then shared.
	Sidecar  bool
	Parallel int // runs at once in RunJobs
	// MaxRate bounds the new connections a second of the runs under way together (each run's
	// load counts; a run over it runs alone): this machine's clients, proxies and pods start
	// about 2,000 a second on 2 cores before they fall behind. Zero: DefaultMaxRate.
	MaxRate float64
	Log     io.Writer // a line per finished run; nil: none
}

// DefaultMaxRate is Config.MaxRate's default.
const DefaultMaxRate = 1200

// DefaultConfig holds the defaults: about 100 requests per second in all, a tenth of a second
// each, so that a stopped pod always has requests in flight and idle keep-alive connections.
func DefaultConfig() Config {
	return Config{
		Pods:             2,
		Grace:            10 * time.Second,
		AppDelay:         100 * time.Millisecond,
		Rate:             50,
		KeepAliveClients: 10,
		KeepAliveRate:    50,
		Warmup:           1500 * time.Millisecond,
		Tail:             500 * time.Millisecond,
		RequestTimeout:   3 * time.Second,
		Parallel:         1,
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	c.Grace = cmp.Or(c.Grace, d.Grace)
	c.AppDelay = cmp.Or(c.AppDelay, d.AppDelay)
	c.Warmup = cmp.Or(c.Warmup, d.Warmup)
	c.Tail = cmp.Or(c.Tail, d.Tail)
	c.RequestTimeout = cmp.Or(c.RequestTimeout, d.RequestTimeout)
	c.CutAfter = cmp.Or(c.CutAfter, c.AppDelay/5)
	c.Pods = cmp.Or(c.Pods, d.Pods)
	c.Rate = cmp.Or(c.Rate, d.Rate)
	c.KeepAliveClients = cmp.Or(c.KeepAliveClients, d.KeepAliveClients)
	c.KeepAliveRate = cmp.Or(c.KeepAliveRate, d.KeepAliveRate)
	c.Parallel = cmp.Or(c.Parallel, d.Parallel)
	c.MaxRate = cmp.Or(c.MaxRate, DefaultMaxRate)
	return c
}

// Runner runs scenarios. It hands out the pods' loopback addresses; use one per process.
type Runner struct {
	cfg Config

	mu     sync.Mutex
	nextIP int
	logMu  sync.Mutex
}

// NewRunner checks cfg and returns a Runner. It needs root (see pod.Available).
func NewRunner(cfg Config) (*Runner, error) {
	cfg = cfg.withDefaults()
	if cfg.Drainit == "" || cfg.Testapp == "" {
		return nil, errors.New("rollout: the paths to drainit and testapp are required")
	}
	if cfg.Pods < 2 {
		return nil, fmt.Errorf("rollout: %d pods: at least 2 are needed (one stops, one serves)", cfg.Pods)
	}
	for _, p := range []*string{&cfg.Drainit, &cfg.Testapp} {
		path, err := exec.LookPath(*p)
		if err != nil {
			return nil, fmt.Errorf("rollout: %w", err)
		}
		*p = path
	}
	if err := pod.Available(); err != nil {
		return nil, fmt.Errorf("rollout: %w", err)
	}
	if !cfg.HostNetwork {
		if err := netnsAvailable(); err != nil {
			return nil, fmt.Errorf("rollout: pods in network namespaces of their own (or -host-network): %w", err)
		}
	}
	return &Runner{cfg: cfg}, nil
}

// NginxPath is where Debian's nginx packages (nginx-light and the others) install nginx.
const NginxPath = "/usr/sbin/nginx"

// Available says why s cannot run here (its init or its app is not installed), or nil.
func (r *Runner) Available(s Scenario) error {
	if _, err := r.initPath(s.Init); err != nil {
		return err
	}
	_, err := r.appPath(s.App)
	return err
}

// appPath is the binary of app a.
func (r *Runner) appPath(a App) (string, error) {
	switch a {
	case TestApp:
		return r.cfg.Testapp, nil
	case Nginx:
		p, err := exec.LookPath(cmp.Or(r.cfg.Nginx, NginxPath))
		if err != nil {
			return "", fmt.Errorf("nginx is not installed (Debian: apt-get install nginx-light): %w", err)
		}
		return p, nil
	}
	return "", fmt.Errorf("unknown app %v", a)
}

func (r *Runner) initPath(i Init) (string, error) {
	var path, name string
	switch i {
	case Tini:
		path, name = r.cfg.Tini, "tini"
	case DumbInit:
		path, name = r.cfg.DumbInit, "dumb-init"
	default:
		return "", nil
	}
	p, err := exec.LookPath(cmp.Or(path, name))
	if err != nil {
		return "", fmt.Errorf("%s is not installed: %w", name, err)
	}
	return p, nil
}

// podIP hands out 127.0.0.2, 127.0.0.3, … (every 127/8 address is on lo). Ports come from the
// kernel, so an address handed out twice, after a wrap, still does not collide.
func (r *Runner) podIP() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.nextIP
	r.nextIP++
	return "127.0." + strconv.Itoa(n/250%250) + "." + strconv.Itoa(2+n%250)
}

// freePort returns a port nobody listens on at ip.
func freePort(ip string) (string, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return "", fmt.Errorf("finding a free port on %s: %w", ip, err)
	}
	defer ln.Close()
	return net.JoinHostPort(ip, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)), nil
}

// runningPod is one started pod.
type runningPod struct {
	*pod.Pod
	addr, ctl string
	out       *lines.Log   // PID 1's stdout and stderr, as a runtime would log them
	dir       string       // the app's files (nginx's config, pid and temp paths), removed after the run
	ns        *netns       // its network namespace (nil: the harness's); ns.dial reaches it
	sidecar   net.Listener // Config.Sidecar's, in the pod's network namespace (nil: none)
}

// SidecarRate is how many new connections a second a pod's sidecar (Config.Sidecar) gets.
const SidecarRate = 20

// startSidecar listens beside the pod's app, in the calling thread's network namespace, and
// answers every connection with a line and a close.
func (rp *runningPod) startSidecar(ip string) error {
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return fmt.Errorf("the pod's sidecar: %w", err)
	}
	rp.sidecar = ln
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, "sidecar\n")
			c.Close()
		}
	}()
	return nil
}

// sidecarTraffic connects to the pod's sidecar SidecarRate times a second until the pod exits.
func (rp *runningPod) sidecarTraffic() {
	tick := time.NewTicker(time.Second / SidecarRate)
	defer tick.Stop()
	addr := rp.sidecar.Addr().String()
	for {
		select {
		case <-rp.Exited:
			return
		case <-tick.C:
			if c, err := rp.ns.dial(addr, time.Second); err == nil {
				_, _ = io.Copy(io.Discard, c)
				c.Close()
			}
		}
	}
}

// nginxConf is the configuration of a pod's nginx: in the foreground under its own PID 1 or
// drainit, one worker like a small container, every file it writes in dir (%[1]s), nothing under
// /var, and a fixed answer on addr (%[2]s). It answers at once, where the test app's requests
// take Config.AppDelay: core nginx has no way to wait a set time before answering, and what its
// stop loses is the new connections refused after it closes its listener, not requests in flight.
const nginxConf = `daemon off;
master_process on;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log stderr;
events {}
http {
	access_log off;
	client_body_temp_path %[1]s/client_body;
	proxy_temp_path %[1]s/proxy;
	fastcgi_temp_path %[1]s/fastcgi;
	uwsgi_temp_path %[1]s/uwsgi;
	scgi_temp_path %[1]s/scgi;
	server {
		listen %[2]s;
		location / {
			return 200 "ok\n";
		}
	}
}
`

// appArgv is the command line of the pod's app, listening on rp.addr; it may create rp.dir.
func (r *Runner) appArgv(s Scenario, rp *runningPod) ([]string, error) {
	bin, err := r.appPath(s.App)
	if err != nil {
		return nil, err
	}
	if s.App != Nginx {
		mode := "-graceful"
		if s.Naive {
			mode = "-naive"
		}
		return []string{bin, "serve", "-addr", rp.addr, mode, "-delay", r.cfg.AppDelay.String()}, nil
	}
	if rp.dir, err = os.MkdirTemp("", "rollout-nginx-"); err != nil {
		return nil, fmt.Errorf("nginx's directory: %w", err)
	}
	conf := filepath.Join(rp.dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(nginxConf, rp.dir, rp.addr)), 0o644); err != nil {
		return nil, fmt.Errorf("nginx's configuration: %w", err)
	}
	// -e: the log nginx opens before it has read its configuration (1.19.5+), else /var/log.
	return []string{bin, "-c", conf, "-p", rp.dir + "/", "-e", "stderr"}, nil
}

// cleanup removes the pod's files and its sidecar; the pod must be gone.
func (rp *runningPod) cleanup() {
	if rp.dir != "" {
		os.RemoveAll(rp.dir)
	}
	if rp.sidecar != nil {
		rp.sidecar.Close()
	}
	rp.ns.close()
}

// startPod starts a pod of scenario s for propagation delay p: in a network namespace of its
// own unless Config.HostNetwork.
func (r *Runner) startPod(s Scenario, p time.Duration) (*runningPod, error) {
	var rp *runningPod
	var err error
	if r.cfg.HostNetwork {
		rp, err = r.startPodHere(s, p)
	} else {
		var ns *netns
		rp, ns, err = startInNetns(func() (*runningPod, <-chan struct{}, error) {
			rp, err := r.startPodHere(s, p)
			if err != nil {
				return nil, nil, err
			}
			return rp, rp.Exited, nil
		})
		if err == nil {
			rp.ns = ns
		}
	}
	if err != nil {
		return nil, err
	}
	if rp.sidecar != nil {
		go rp.sidecarTraffic()
	}
	return rp, nil
}

// startPodHere starts a pod of scenario s in the calling thread's network namespace.
func (r *Runner) startPodHere(s Scenario, p time.Duration) (*runningPod, error) {
	ip := r.podIP()
	addr, err := freePort(ip)
	if err != nil {
		return nil, err
	}
	rp := &runningPod{addr: addr, out: lines.New("output")}
	if r.cfg.Sidecar {
		if err := rp.startSidecar(ip); err != nil {
			return nil, err
		}
	}
	app, err := r.appArgv(s, rp)
	if err != nil {
		rp.cleanup()
		return nil, fmt.Errorf("scenario %s: %w", s.Key, err)
	}
	var argv []string
	switch s.Init {
	case Bare:
		argv = app
	case Tini, DumbInit:
		init, err := r.initPath(s.Init)
		if err != nil {
			rp.cleanup()
			return nil, err
		}
		argv = []string{init}
		if s.Init == Tini {
			argv = append(argv, "--")
		}
		argv = append(argv, app...)
	case Drainit:
		// Both ports come free from the kernel one after the other on the same address, and it
		// may hand out the one it just gave back.
		for rp.ctl == "" || rp.ctl == addr {
			if rp.ctl, err = freePort(ip); err != nil {
				rp.cleanup()
				return nil, err
			}
		}
		argv = []string{r.cfg.Drainit, "--grace-period", r.grace(s).String(), "--http-addr", rp.ctl,
			"--termination-log", "", "--log-format", "json"}
		if s.DrainitArgs != nil {
			argv = append(argv, s.DrainitArgs(p)...)
		}
		argv = append(append(argv, "--"), app...)
	default:
		rp.cleanup()
		return nil, fmt.Errorf("scenario %s: unknown init %v", s.Key, s.Init)
	}
	rp.Pod, err = pod.Start(argv, pod.Options{Stdout: rp.out, Stderr: rp.out})
	if err != nil {
		rp.cleanup()
		return nil, err
	}
	return rp, nil
}

// waitReady waits until the pod's app (and drainit's control server) accept connections.
func (rp *runningPod) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(10 * time.Second)
	for _, addr := range []string{rp.addr, rp.ctl} {
		if addr == "" {
			continue
		}
		for {
			c, err := rp.ns.dial(addr, time.Second)
			if err == nil {
				c.Close()
				break
			}
			select {
			case <-rp.Exited:
				return fmt.Errorf("pod %s exited before it served: %s", rp.addr, rp.tail())
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("pod %s: nothing listens on %s after 10s: %s", rp.addr, addr, rp.tail())
			}
		}
	}
	return nil
}

func (r *Runner) grace(s Scenario) time.Duration { return cmp.Or(s.Grace, r.cfg.Grace) }

// preStop is the pod's preStop hook. ctl is where the kubelet reaches drainit's control server.
func (r *Runner) preStop(s Scenario, p time.Duration, ctl string) *kubelet.PreStop {
	switch s.PreStop {
	case ExecSleep:
		secs := strconv.FormatFloat(s.drain(p).Seconds(), 'f', -1, 64)
		if sleep, err := exec.LookPath("sleep"); err == nil {
			return &kubelet.PreStop{Exec: []string{sleep, secs}}
		}
		return &kubelet.PreStop{Exec: []string{r.cfg.Drainit, "sleep", secs}}
	case HTTPPreStop:
		return &kubelet.PreStop{HTTPGet: "http://" + ctl + "/prestop"}
	}
	return nil
}

// Run runs scenario s once in cell c: starts the pods, the proxies and the load, deletes the
// first pod, keeps the load on until the pod is gone and the last proxy's delay has passed (plus
// Config.Tail), and reports. An error means the harness could not do its job (a pod did not
// start, the load never reached the pod to be stopped), never that requests were lost.
func (r *Runner) Run(ctx context.Context, s Scenario, c Cell, rep int) (Result, error) {
	cfg := r.cfg
	p := c.Propagation
	res := Result{Scenario: s.Key, Name: s.Name, Propagation: seconds(p), Topology: c.Topology, Rate: c.Rate, Rep: rep}
	proxies, err := c.proxies()
	if err != nil {
		return res, err
	}
	late := watchLateness(10 * time.Millisecond)
	defer late.stop()
	pods := make([]*runningPod, 0, cfg.Pods)
	defer func() {
		for _, rp := range pods {
			// Only while unreaped: until Exited is closed the pid is still this pod's.
			select {
			case <-rp.Exited:
			default:
				rp.Kill()
			}
			rp.cleanup()
		}
	}()
	for range cfg.Pods {
		rp, err := r.startPod(s, p)
		if err != nil {
			return res, err
		}
		pods = append(pods, rp)
	}
	endpoints := make([]string, len(pods))
	byAddr := map[string]*runningPod{}
	for i, rp := range pods {
		if err := rp.waitReady(ctx); err != nil {
			return res, err
		}
		endpoints[i] = rp.addr
		byAddr[rp.addr] = rp
	}
	dial := func(addr string, timeout time.Duration) (net.Conn, error) {
		if rp := byAddr[addr]; rp != nil {
			return rp.ns.dial(addr, timeout)
		}
		return net.DialTimeout("tcp", addr, timeout)
	}
	// The proxies, each with its share of the new-connection load; the keep-alive clients go
	// through the first (the largest share).
	total := cfg.Rate
	if c.Rate > 0 {
		total = c.Rate * float64(cfg.Pods)
	}
	res.OfferedRate = total
	var lbs []*Balancer
	var loads []*Running
	defer func() {
		for _, lb := range lbs {
			lb.Close()
		}
	}()
	newProxy := NewBalancer
	if s.Pooled {
		newProxy = NewPooledProxy
	}
	for i, px := range proxies {
		lb, err := newProxy("127.0.0.1:0", endpoints)
		if err != nil {
			return res, err
		}
		lb.CutAfter, lb.Dial = cfg.CutAfter, dial
		lbs = append(lbs, lb)
		load := &Load{Addr: lb.Addr(), Rate: total * px.Share, Poisson: cfg.Poisson, Seed: uint64(rep)<<8 | uint64(i),
			Timeout: cfg.RequestTimeout, Explain: lb.Take}
		if i == 0 {
			load.KeepAliveClients, load.KeepAliveRate = cfg.KeepAliveClients, cfg.KeepAliveRate
		}
		loads = append(loads, load.Start())
	}
	stopLoad := sync.OnceValue(func() Stats {
		var st Stats
		for _, l := range loads {
			one := l.Stop()
			st.NewConnRequests += one.NewConnRequests
			st.KeepAliveRequests += one.KeepAliveRequests
			st.Succeeded += one.Succeeded
			st.Retried += one.Retried
			st.Failures = append(st.Failures, one.Failures...)
			st.NewConnRate += one.NewConnRate
			st.Stalls = append(st.Stalls, one.Stalls...)
		}
		return st
	})
	defer stopLoad()
	succeeded := func() int {
		n := 0
		for _, l := range loads {
			n += l.Succeeded()
		}
		return n
	}
	routes := func() []Route {
		var all []Route
		for _, lb := range lbs {
			all = append(all, lb.Routes()...)
		}
		sort.SliceStable(all, func(i, j int) bool { return all[i].At.Before(all[j].At) })
		return all
	}

	// Warm up: the load has run for Warmup, every keep-alive client has had an answer, and
	// every pod has had connections, so the stop meets the traffic a pod in service has. That
	// includes a history of 30 new connections to the pod (1.2 s at the default 25/s, 3 s at
	// most), and a second and a half of traffic at least, as a pod in service has, for the
	// automatic quiet period to start from (drainwatch.AutoMinReach: traffic younger than a
	// second is spread over one, which lengthens the silence it needs).
	warmup := max(cfg.Warmup, min(3*time.Second, time.Duration(30/(total/float64(cfg.Pods))*float64(time.Second))))
	begin := time.Now()
	victim := pods[0]
	for {
		routed := map[string]bool{}
		for _, rt := range routes() {
			routed[rt.Endpoint] = true
		}
		if time.Since(begin) >= warmup && succeeded() >= cfg.KeepAliveClients && len(routed) == len(pods) {
			break
		}
		if time.Since(begin) > warmup+10*time.Second {
			return res, fmt.Errorf("warm-up: %d requests succeeded, %d of %d pods reached after %s",
				succeeded(), len(routed), len(pods), time.Since(begin).Round(time.Millisecond))
		}
		if err := pause(ctx, 5*time.Millisecond); err != nil {
			return res, err
		}
	}

	// The kubelet reaches drainit's control server from outside the pod: through a forwarder
	// into the pod's namespace when it has one of its own.
	ctl := victim.ctl
	if victim.ns != nil && ctl != "" && s.PreStop == HTTPPreStop {
		fwd, err := NewBalancer("127.0.0.1:0", []string{victim.ctl})
		if err != nil {
			return res, err
		}
		fwd.Dial = victim.ns.dial
		defer fwd.Close()
		ctl = fwd.Addr()
	}
	var cpu *cpuSamples
	if s.Init == Drainit {
		cpu = sampleCPU(victim.PID, 20*time.Millisecond)
		defer cpu.stop()
	}

	// The deletion: endpoint removal and the kubelet's stop start together, as they do when the
	// API server marks the pod terminating. Each proxy drops the pod after its own delay.
	res.TCPSockets = tcpSockets()
	t0 := time.Now()
	for i, px := range proxies {
		removal := time.AfterFunc(px.Delay, func() { lbs[i].Remove(victim.addr) })
		defer removal.Stop()
	}
	k := kubelet.Pod{Grace: r.grace(s), PreStop: r.preStop(s, p, ctl), StopSignal: s.StopSignal}
	rec := k.Stop(kubelet.Container{PID: victim.PID, Exited: victim.Exited})
	end := rec.ExitedAt
	if e := t0.Add(p); e.After(end) {
		end = e
	}
	if err := pause(ctx, time.Until(end.Add(cfg.Tail))); err != nil {
		return res, err
	}
	st := stopLoad()
	worst, stalls := late.stop()

	res.NewConnRequests, res.KeepAliveRequests = st.NewConnRequests, st.KeepAliveRequests
	res.Requests = st.NewConnRequests + st.KeepAliveRequests
	res.Retried = st.Retried
	res.AchievedRate = math.Round(st.NewConnRate*10) / 10
	res.ByKind = map[Kind]int{}
	for _, f := range st.Failures {
		res.Failed++
		res.ByKind[f.Kind]++
		res.Failures = append(res.Failures, FailureAt{
			Mode: f.Mode, Kind: f.Kind, At: seconds(f.At.Sub(t0)), Sent: seconds(f.Sent.Sub(t0)),
			Retried: f.Retried, Seen: f.Seen, Err: f.Err,
		})
	}
	for _, lb := range lbs {
		for _, e := range lb.Events() {
			if e.Kind == EventCut {
				// The harness may have seen the pod close the connection as late as its own
				// timers came: the pod may have closed it within CutAfter of the request, as
				// one closing an idle connection does.
				e.Kind = closedKind(e.At.Sub(e.Delivered), worst, cfg.CutAfter)
			}
			switch e.Kind {
			case EventCut:
				res.Cut++
			case EventDropped, EventUnread:
				res.Dropped++
			default:
				continue
			}
			res.Drops = append(res.Drops, DropAt{Kind: e.Kind, Delivered: seconds(e.Delivered.Sub(t0)),
				At: seconds(e.At.Sub(t0)), Client: e.Client, Endpoint: e.Endpoint})
		}
	}
	all := routes()
	var lastRouted time.Time
	// The pod's rate: over the second before the deletion, or the second half of a shorter
	// warm-up (the keep-alive clients connect at its start).
	window := min(time.Second, t0.Sub(begin)/2)
	for _, rt := range all {
		if rt.Endpoint != victim.addr {
			continue
		}
		switch {
		case rt.At.Before(t0):
			res.RoutedBefore++
			if !rt.At.Before(t0.Add(-window)) {
				res.PodRate++
			}
		default:
			res.RoutedAfter++
			lastRouted = rt.At
		}
	}
	res.PodRate = math.Round(res.PodRate/window.Seconds()*10) / 10
	if res.RoutedBefore == 0 {
		return res, fmt.Errorf("the load never reached the stopped pod %s before the deletion", victim.addr)
	}
	if !lastRouted.IsZero() {
		at := seconds(lastRouted.Sub(t0))
		res.LastRouted = &at
	}
	if s.Pooled {
		n := 0
		for _, lb := range lbs {
			for _, d := range lb.PoolDials() {
				if d.Endpoint == victim.addr && !d.At.Before(t0) {
					n++
				}
			}
		}
		res.PoolDialsAfter = &n
	}
	for _, lb := range lbs {
		if at := lb.RemovedAt(victim.addr); !at.IsZero() {
			res.Removed = max(res.Removed, seconds(at.Sub(t0)))
		}
	}
	res.Stop = seconds(rec.ExitedAt.Sub(t0))
	if !rec.PreStopEnd.IsZero() {
		at := seconds(rec.PreStopEnd.Sub(t0))
		res.PreStop = &at
		if cpu != nil {
			if f, ok := cpu.fraction(t0, rec.PreStopEnd); ok {
				res.DrainCPU = &f
			}
		}
	}
	if rec.PreStopErr != nil {
		res.PreStopError = rec.PreStopErr.Error()
	}
	if !rec.SignalAt.IsZero() {
		at := seconds(rec.SignalAt.Sub(t0))
		res.Signal = &at
	}
	res.Killed = rec.Killed
	res.ExitStatus, _ = victim.Wait(time.Second)
	if s.Init == Drainit {
		// Once PID 1 is reaped, its output has been copied in full (os/exec waits for the pipe).
		res.Drain = parseDrainLog([]byte(victim.out.String()))
	}
	res.Tail = victim.tail()
	if res.Drain != nil && res.Drain.Reason != "fallback" && !rec.PreStopEnd.IsZero() {
		// drainit answers /prestop as its drain ends, so it took its baseline Drained - Baseline
		// before the kubelet had the answer, or a little later as the harness dates it (the answer
		// takes a few milliseconds to arrive): the connections sent to the pod from then until the
		// answer are those drainit had to see. Those before the baseline it counts as there
		// already, and the quiet counts from the baseline (on a loaded machine tens of milliseconds
		// after the drain's start).
		from := rec.PreStopEnd.Add(-(res.Drain.Drained - res.Drain.Baseline).Duration())
		var last time.Time
		for _, rt := range all {
			if rt.Endpoint != victim.addr {
				continue
			}
			last = rt.At
			if !rt.At.Before(from) && rt.At.Before(rec.PreStopEnd) {
				res.Drain.Routed++
				if rt.ClientClosedFirst {
					res.Drain.ClientClosedFirst++
				}
			}
		}
		res.Drain.QuietAfterLast = seconds(rec.PreStopEnd.Sub(last))
	}
	stalls = append(stalls, st.Stalls...)
	res.TimerLate = seconds(worst)
	res.Load1 = loadAverage()
	res.Noisy = res.TimerLate.Duration() > cfg.CutAfter
	for _, sp := range st.Stalls {
		res.Noisy = res.Noisy || sp.to.Sub(sp.from) > cfg.CutAfter
	}
	if d := res.Drain; d != nil && d.Reason == "quiet" && !rec.PreStopEnd.IsZero() {
		// The silence that ended the drain: how much of it the harness spent stalled, sending
		// the pod nothing whatever the load asked for. It ended when drainit logged so (the
		// /prestop answer reaches the harness later, tens of milliseconds on a loaded machine,
		// which would slide the window past a stall at its start).
		end := rec.PreStopEnd
		if !d.End.IsZero() {
			end = d.End
		}
		d.SilenceStalled = seconds(overlap(stalls, end.Add(-d.Silence.Duration()), end))
	}
	return res, nil
}

// Job is one run of RunJobs.
type Job struct {
	Scenario Scenario
	Cell     Cell
	Rep      int
}

// estimate is roughly how long the run takes beyond its fixed costs: the pod keeps serving for
// its drain, and the load runs at least until the propagation delay is over.
func (j Job) estimate() time.Duration {
	return max(j.Scenario.drain(j.Cell.Propagation), j.Cell.Propagation)
}

// RunJobs runs jobs, Config.Parallel at once, and returns the results in the jobs' order. Runs
// that failed are left out and their errors joined; the others are still returned. The longest
// runs start first, so that the short ones fill the gaps: a fixed 10 s drain started last would
// keep everything waiting for it.
func (r *Runner) RunJobs(ctx context.Context, jobs []Job) ([]Result, error) {
	results := make([]*Result, len(jobs))
	errs := make([]error, len(jobs))
	sem := newRateSem(r.cfg.Parallel, r.cfg.MaxRate)
	var wg sync.WaitGroup
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		return jobs[order[a]].estimate() > jobs[order[b]].estimate()
	})
	for k, i := range order {
		j := jobs[i]
		load := r.cfg.Rate + r.cfg.KeepAliveRate
		if j.Cell.Rate > 0 {
			load = j.Cell.Rate*float64(r.cfg.Pods) + r.cfg.KeepAliveRate
		}
		if err := sem.acquire(ctx, load); err != nil {
			errs[i] = fmt.Errorf("%d of %d runs not started: %w", len(order)-k, len(jobs), err)
			break // once cancelled, the rest would only repeat the same error
		}
		wg.Add(1)
		go func() {
			defer func() { sem.release(load); wg.Done() }()
			res, err := r.Run(ctx, j.Scenario, j.Cell, j.Rep)
			if err != nil {
				errs[i] = fmt.Errorf("%s, %s, run %d: %w", j.Scenario.Key, j.Cell, j.Rep, err)
				return
			}
			results[i] = &res
			rate := ""
			if j.Cell.Rate > 0 {
				rate = fmt.Sprintf(" at %.0f/s", j.Cell.Rate)
			}
			r.logf("%-16s %s%s run %2d: %5d requests, %4d failed, %3d cut, %3d dropped, stop %6.2fs%s%s\n",
				j.Scenario.Key, j.Cell, rate, j.Rep, res.Requests, res.Failed, res.Cut, res.Dropped, float64(res.Stop),
				killedNote(res.Killed), noisyNote(res))
		}()
	}
	wg.Wait()
	var out []Result
	for _, res := range results {
		if res != nil {
			out = append(out, *res)
		}
	}
	return out, errors.Join(errs...)
}

// rateSem admits runs while at most n are under way and their loads add up to at most max (a
// run whose load is over max is admitted alone).
type rateSem struct {
	mu      sync.Mutex
	changed chan struct{} // closed and replaced when a run ends
	n, runs int
	max     float64
	load    float64
}

func newRateSem(n int, max float64) *rateSem {
	return &rateSem{n: n, max: max, changed: make(chan struct{})}
}

func (s *rateSem) acquire(ctx context.Context, load float64) error {
	for {
		s.mu.Lock()
		if s.runs < s.n && (s.runs == 0 || s.load+load <= s.max) {
			s.runs++
			s.load += load
			s.mu.Unlock()
			return nil
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *rateSem) release(load float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs--
	s.load -= load
	close(s.changed)
	s.changed = make(chan struct{})
}

func noisyNote(res Result) string {
	if !res.Noisy {
		return ""
	}
	return fmt.Sprintf(", noisy (timers %.0fms late, load %.1f)", float64(res.TimerLate)*1000, res.Load1)
}

func killedNote(k bool) string {
	if k {
		return ", SIGKILLed"
	}
	return ""
}

func (r *Runner) logf(format string, a ...any) {
	if r.cfg.Log == nil {
		return
	}
	r.logMu.Lock()
	defer r.logMu.Unlock()
	fmt.Fprintf(r.cfg.Log, format, a...)
}

// tcpSockets is how many TCP sockets the network namespace holds, TIME_WAIT included
// (/proc/net/sockstat's tw and alloc); -1 if unknown.
func tcpSockets() int {
	tcp, err := testenv.SockstatTCP("/proc")
	if err != nil {
		return -1
	}
	return tcp["tw"] + tcp["alloc"]
}

// pause waits d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// tail is the end of the pod's output, for error messages.
func (rp *runningPod) tail() string { return strings.TrimSpace(rp.out.Tail(20)) }
