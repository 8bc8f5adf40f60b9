package rollout

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	"github.com/drainit/drainit/internal/proc"
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
	Parallel int       // runs at once in RunAll
	Log      io.Writer // a line per finished run; nil: none
}

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
		Warmup:           500 * time.Millisecond,
		Tail:             500 * time.Millisecond,
		RequestTimeout:   3 * time.Second,
		Parallel:         1,
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	set := func(v *time.Duration, def time.Duration) {
		if *v == 0 {
			*v = def
		}
	}
	set(&c.Grace, d.Grace)
	set(&c.AppDelay, d.AppDelay)
	set(&c.Warmup, d.Warmup)
	set(&c.Tail, d.Tail)
	set(&c.RequestTimeout, d.RequestTimeout)
	if c.CutAfter == 0 {
		c.CutAfter = c.AppDelay / 5
	}
	if c.Pods == 0 {
		c.Pods = d.Pods
	}
	if c.Rate == 0 {
		c.Rate = d.Rate
	}
	if c.KeepAliveClients == 0 {
		c.KeepAliveClients = d.KeepAliveClients
	}
	if c.KeepAliveRate == 0 {
		c.KeepAliveRate = d.KeepAliveRate
	}
	if c.Parallel == 0 {
		c.Parallel = d.Parallel
	}
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
		path := r.cfg.Nginx
		if path == "" {
			path = NginxPath
		}
		p, err := exec.LookPath(path)
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
	if path == "" {
		path = name
	}
	p, err := exec.LookPath(path)
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
	out       *lines.Log // PID 1's stdout and stderr, as a runtime would log them
	dir       string     // the app's files (nginx's config, pid and temp paths), removed after the run
}

// nginxConf is the configuration of a pod's nginx: in the foreground under its own PID 1 or
// drainit, one worker like a small container, every file it writes in dir (%[1]s), nothing under
// /var, and a fixed answer on addr (%[2]s).
//
// The test app's requests take Config.AppDelay, so that a naive app's exit cuts some in flight.
// nginx answers at once (core nginx has no way to wait a set time before answering), and that
// shows what matters here just as well: SIGQUIT is nginx's graceful stop (finish in-flight
// requests, close idle keep-alive connections), whose first step is to close the listening
// socket. Stopped at once, nginx loses what every graceful app loses, the new connections the
// balancer still sends it during the propagation delay (refused), not requests in flight.
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

// cleanup removes the pod's files; the pod must be gone.
func (rp *runningPod) cleanup() {
	if rp.dir != "" {
		os.RemoveAll(rp.dir)
	}
}

func (r *Runner) startPod(s Scenario, p time.Duration) (*runningPod, error) {
	ip := r.podIP()
	addr, err := freePort(ip)
	if err != nil {
		return nil, err
	}
	rp := &runningPod{addr: addr, out: lines.New("output")}
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
			c, err := net.DialTimeout("tcp", addr, time.Second)
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

func (r *Runner) grace(s Scenario) time.Duration {
	if s.Grace > 0 {
		return s.Grace
	}
	return r.cfg.Grace
}

func (r *Runner) preStop(s Scenario, p time.Duration, rp *runningPod) *kubelet.PreStop {
	switch s.PreStop {
	case ExecSleep:
		secs := strconv.FormatFloat(s.drain(p).Seconds(), 'f', -1, 64)
		if sleep, err := exec.LookPath("sleep"); err == nil {
			return &kubelet.PreStop{Exec: []string{sleep, secs}}
		}
		return &kubelet.PreStop{Exec: []string{r.cfg.Drainit, "sleep", secs}}
	case HTTPPreStop:
		return &kubelet.PreStop{HTTPGet: "http://" + rp.ctl + "/prestop"}
	}
	return nil
}

// Run runs scenario s once with propagation delay p: starts the pods and the load, deletes the
// first pod, keeps the load on until the pod is gone and the propagation delay has passed (plus
// Config.Tail), and reports. An error means the harness could not do its job (a pod did not
// start, the load never reached the pod to be stopped), never that requests were lost.
func (r *Runner) Run(ctx context.Context, s Scenario, p time.Duration, rep int) (Result, error) {
	cfg := r.cfg
	res := Result{Scenario: s.Key, Name: s.Name, Propagation: seconds(p), Rep: rep}
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
	for i, rp := range pods {
		if err := rp.waitReady(ctx); err != nil {
			return res, err
		}
		endpoints[i] = rp.addr
	}
	lb, err := NewBalancer("127.0.0.1:0", endpoints)
	if err != nil {
		return res, err
	}
	lb.CutAfter = cfg.CutAfter
	defer lb.Close()
	load := &Load{
		Addr: lb.Addr(), Rate: cfg.Rate, KeepAliveClients: cfg.KeepAliveClients,
		KeepAliveRate: cfg.KeepAliveRate, Timeout: cfg.RequestTimeout, Explain: lb.Take,
	}
	running := load.Start()
	stopLoad := sync.OnceValue(running.Stop)
	defer stopLoad()

	// Warm up: the load has run for Warmup, every keep-alive client has had an answer, and
	// every pod has had connections, so the stop meets the traffic a pod in service has.
	begin := time.Now()
	victim := pods[0]
	for {
		routed := map[string]bool{}
		for _, rt := range lb.Routes() {
			routed[rt.Endpoint] = true
		}
		if time.Since(begin) >= cfg.Warmup && running.Succeeded() >= cfg.KeepAliveClients && len(routed) == len(pods) {
			break
		}
		if time.Since(begin) > cfg.Warmup+10*time.Second {
			return res, fmt.Errorf("warm-up: %d requests succeeded, %d of %d pods reached after %s",
				running.Succeeded(), len(routed), len(pods), time.Since(begin).Round(time.Millisecond))
		}
		if err := pause(ctx, 5*time.Millisecond); err != nil {
			return res, err
		}
	}

	// The deletion: endpoint removal and the kubelet's stop start together, as they do when the
	// API server marks the pod terminating.
	res.TCPSockets = tcpSockets()
	t0 := time.Now()
	removal := time.AfterFunc(p, func() { lb.Remove(victim.addr) })
	defer removal.Stop()
	k := kubelet.Pod{Grace: r.grace(s), PreStop: r.preStop(s, p, victim), StopSignal: s.StopSignal}
	rec := k.Stop(kubelet.Container{PID: victim.PID, Exited: victim.Exited})
	end := rec.ExitedAt
	if e := t0.Add(p); e.After(end) {
		end = e
	}
	if err := pause(ctx, time.Until(end.Add(cfg.Tail))); err != nil {
		return res, err
	}
	st := stopLoad()

	res.NewConnRequests, res.KeepAliveRequests = st.NewConnRequests, st.KeepAliveRequests
	res.Requests = st.NewConnRequests + st.KeepAliveRequests
	res.Retried = st.Retried
	res.ByKind = map[Kind]int{}
	for _, f := range st.Failures {
		res.Failed++
		res.ByKind[f.Kind]++
		res.Failures = append(res.Failures, FailureAt{
			Mode: f.Mode, Kind: f.Kind, At: seconds(f.At.Sub(t0)), Sent: seconds(f.Sent.Sub(t0)),
			Retried: f.Retried, Seen: f.Seen, Err: f.Err,
		})
	}
	for _, e := range lb.Events() {
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
	for _, rt := range lb.Routes() {
		if rt.Endpoint == victim.addr {
			if rt.At.Before(t0) {
				res.RoutedBefore++
			} else {
				res.RoutedAfter++
			}
		}
	}
	if res.RoutedBefore == 0 {
		return res, fmt.Errorf("the load never reached the stopped pod %s before the deletion", victim.addr)
	}
	if at := lb.RemovedAt(victim.addr); !at.IsZero() {
		res.Removed = seconds(at.Sub(t0))
	}
	res.Stop = seconds(rec.ExitedAt.Sub(t0))
	if !rec.PreStopEnd.IsZero() {
		at := seconds(rec.PreStopEnd.Sub(t0))
		res.PreStop = &at
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
	if res.Drain != nil && res.Drain.Reason != "fallback" && !rec.PreStopEnd.IsZero() {
		// drainit answers /prestop as its drain ends, so the drain began Drained before the
		// kubelet had the answer (give or take the request's few milliseconds): the connections
		// sent to the pod from then on are those drainit had to see.
		from := rec.PreStopEnd.Add(-res.Drain.Drained.Duration())
		var last time.Time
		for _, rt := range lb.Routes() {
			if rt.Endpoint != victim.addr {
				continue
			}
			last = rt.At
			if !rt.At.Before(from) {
				res.Drain.Routed++
				if rt.ClientClosedFirst {
					res.Drain.ClientClosedFirst++
				}
			}
		}
		res.Drain.QuietAfterLast = seconds(rec.PreStopEnd.Sub(last))
	}
	return res, nil
}

// CompareDrains runs the adaptive drain beside fixed 5 s and 10 s drains (DrainKeys) at each
// propagation delay, repeat times, and returns the stop duration at zero failures per scenario
// and delay, the checks (nothing lost; the adaptive drain within its bound), and the runs. It is
// what `make bench` reports; WriteDrainTable prints it.
func (r *Runner) CompareDrains(ctx context.Context, props []time.Duration, repeat int) ([]DrainStat, []Check, []Result, error) {
	scenarios, err := Lookup(DrainKeys())
	if err != nil {
		return nil, nil, nil, err
	}
	results, err := r.RunAll(ctx, scenarios, props, repeat)
	claims := ClaimsFor(scenarios)
	return DrainStats(results, claims), Checks(Summarize(results, claims)), results, err
}

// Job is one run of RunJobs.
type Job struct {
	Scenario    Scenario
	Propagation time.Duration
	Rep         int
}

// estimate is roughly how long the run takes beyond its fixed costs: the pod keeps serving for
// its drain, and the load runs at least until the propagation delay is over.
func (j Job) estimate() time.Duration {
	return max(j.Scenario.drain(j.Propagation), j.Propagation)
}

// RunAll runs every scenario at every propagation delay, repeat times, Config.Parallel runs at
// once, and returns the results in that order (propagation, scenario, repetition). Runs that
// failed are left out and their errors joined; the others are still returned.
func (r *Runner) RunAll(ctx context.Context, scenarios []Scenario, props []time.Duration, repeat int) ([]Result, error) {
	var jobs []Job
	for _, p := range props {
		for _, s := range scenarios {
			for rep := 1; rep <= repeat; rep++ {
				jobs = append(jobs, Job{s, p, rep})
			}
		}
	}
	return r.RunJobs(ctx, jobs)
}

// RunJobs runs jobs, Config.Parallel at once, and returns the results in the jobs' order. Runs
// that failed are left out and their errors joined; the others are still returned. The longest
// runs start first, so that the short ones fill the gaps: a fixed 10 s drain started last would
// keep everything waiting for it.
func (r *Runner) RunJobs(ctx context.Context, jobs []Job) ([]Result, error) {
	results := make([]*Result, len(jobs))
	errs := make([]error, len(jobs))
	sem := make(chan struct{}, r.cfg.Parallel)
	var wg sync.WaitGroup
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		return jobs[order[a]].estimate() > jobs[order[b]].estimate()
	})
	for _, i := range order {
		j := jobs[i]
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			errs[i] = ctx.Err()
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			res, err := r.Run(ctx, j.Scenario, j.Propagation, j.Rep)
			if err != nil {
				errs[i] = fmt.Errorf("%s, propagation %s, run %d: %w", j.Scenario.Key, j.Propagation, j.Rep, err)
				return
			}
			results[i] = &res
			r.logf("%-16s propagation %-5s run %2d: %5d requests, %4d failed, %3d cut, %3d dropped, stop %6.2fs%s\n",
				j.Scenario.Key, j.Propagation, j.Rep, res.Requests, res.Failed, res.Cut, res.Dropped, float64(res.Stop), killedNote(res.Killed))
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
	tcp, err := proc.SockstatTCP("/proc")
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
