package rollout

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Init is what runs as the pod's PID 1.
type Init int

// The inits a scenario can put in front of the app.
const (
	Bare     Init = iota // the app itself is PID 1
	Drainit              // drainit, with the app as its child
	Tini                 // tini -- app
	DumbInit             // dumb-init app
)

func (i Init) String() string {
	switch i {
	case Bare:
		return "bare"
	case Drainit:
		return "drainit"
	case Tini:
		return "tini"
	case DumbInit:
		return "dumb-init"
	}
	return fmt.Sprintf("Init(%d)", int(i))
}

// App is the server each pod runs.
type App int

// The apps a scenario can run.
const (
	TestApp App = iota // integration/testapp serve: every request takes Config.AppDelay
	Nginx              // a real nginx (Config.Nginx), answering 200 at once
)

func (a App) String() string {
	switch a {
	case TestApp:
		return "testapp"
	case Nginx:
		return "nginx"
	}
	return fmt.Sprintf("App(%d)", int(a))
}

// PreStopKind is the form of the pod's preStop hook.
type PreStopKind int

// The preStop forms of the kubelet simulator the harness uses.
const (
	NoPreStop   PreStopKind = iota
	ExecSleep               // exec: sleep N, run by the kubelet (the pod shares the host's fs)
	HTTPPreStop             // httpGet to drainit's control server, /prestop
)

// Scenario is one way of running the pods, compared with the others in one run.
type Scenario struct {
	Key   string // short name for the command line
	Name  string // label in the table
	Init  Init
	App   App
	Naive bool // the app exits at once on SIGTERM; otherwise it drains in-flight requests first
	// StopSignal is the signal the kubelet sends PID 1: the image's STOPSIGNAL (SIGQUIT for every
	// image FROM nginx). Zero: SIGTERM.
	StopSignal syscall.Signal
	// PreStop is the hook; ExecSleep sleeps for Drain(p).
	PreStop PreStopKind
	// Drain is how long the app keeps serving after the deletion before it is told to stop, for a
	// propagation delay p: the preStop sleep, or drainit's drain. Nil: it is told at once. The
	// checks expect no loss when Drain(p) >= p and the app is graceful.
	Drain func(p time.Duration) time.Duration
	// DrainitArgs are drainit's options for propagation delay p (Init == Drainit), besides the
	// grace period and the control server's address, which the harness sets.
	DrainitArgs func(p time.Duration) []string
	// Grace is the pod's terminationGracePeriodSeconds (and drainit's --grace-period); zero means
	// Config.Grace.
	Grace time.Duration
	// MaxStop, if set, is the longest pod stop duration the scenario claims in cell c (c.Propagation
	// is the last proxy's delay): the adaptive drain's promise, checked beside its losses.
	MaxStop func(c Cell) time.Duration
	// MedianStop, if set, is the median pod stop duration the scenario claims in cell c (zero:
	// none): the automatic quiet period's promise where the rate is low (issue 40).
	MedianStop func(c Cell) time.Duration
	// OutsideModel, if set, says why the scenario makes no claim in cell c (nothing expected, no
	// stop bound): the automatic quiet period with a straggler carrying less than half of what the
	// other proxies leave (docs/adaptive-drain.md, "The automatic quiet period"), an adaptive drain
	// counting new connections behind a pooling L7 proxy. Its results are still reported.
	OutsideModel func(c Cell) string
	// Pooled: the proxies in front of the pods are L7 pooling proxies (NewPooledProxy), which
	// route each request over keep-alive connections they keep to each pod, as an ingress
	// controller does, instead of L4 balancers that route new connections, as kube-proxy does.
	Pooled bool
}

// Cell is where a scenario runs: the proxies in front of the pods, and the load.
type Cell struct {
	// Propagation is the proxy's delay, or with a Topology its last proxy's (D_last).
	Propagation time.Duration
	// Topology names the proxies (Topologies); "": one proxy with delay Propagation.
	Topology string
	// Rate is the new connections per second the stopped pod gets before the deletion; the load
	// is that times the pods. 0: Config.Rate for the whole load.
	Rate float64
}

// Proxy is one balancer in front of the pods: a node's kube-proxy, an ingress replica.
type Proxy struct {
	Delay time.Duration // when it stops sending new connections to the deleted pod
	Share float64       // its part of the new-connection load (a Topology's add up to 1)
}

// Topology is a set of proxies that drop the deleted pod each at its own time, so that the
// traffic fades in steps (issue 16).
type Topology struct {
	Name    string
	Proxies []Proxy
}

// Topologies returns the named proxy sets: three proxies of equal share that drop the pod at
// 0.3, 1 and 2.5 s ("staggered"), and the same with a fourth, slow one carrying 2% of the
// traffic until 4 s ("straggler"), a step the automatic quiet period's model does not cover.
func Topologies() []Topology {
	third := 1.0 / 3
	return []Topology{
		{Name: "staggered", Proxies: []Proxy{{300 * time.Millisecond, third}, {time.Second, third}, {2500 * time.Millisecond, third}}},
		{Name: "straggler", Proxies: []Proxy{{300 * time.Millisecond, 0.98 * third}, {time.Second, 0.98 * third},
			{2500 * time.Millisecond, 0.98 * third}, {4 * time.Second, 0.02}}},
	}
}

// LookupTopology returns the named topology.
func LookupTopology(name string) (Topology, error) {
	var known []string
	for _, t := range Topologies() {
		if t.Name == name {
			return t, nil
		}
		known = append(known, t.Name)
	}
	return Topology{}, fmt.Errorf("unknown proxy topology %q (known: %s)", name, strings.Join(known, ", "))
}

// TopologyCell is the cell of topology t at pod rate rate: its propagation is t's last delay.
func TopologyCell(t Topology, rate float64) Cell {
	c := Cell{Topology: t.Name, Rate: rate}
	for _, p := range t.Proxies {
		c.Propagation = max(c.Propagation, p.Delay)
	}
	return c
}

// proxies are the balancers of cell c: its topology's, or one with delay c.Propagation. The
// largest share comes first (it takes the keep-alive clients).
func (c Cell) proxies() ([]Proxy, error) {
	if c.Topology == "" {
		return []Proxy{{c.Propagation, 1}}, nil
	}
	t, err := LookupTopology(c.Topology)
	if err != nil {
		return nil, err
	}
	ps := slices.Clone(t.Proxies)
	slices.SortStableFunc(ps, func(a, b Proxy) int { return cmp.Compare(b.Share, a.Share) })
	return ps, nil
}

// String is the cell as the tables show it: "1s", or "staggered (0.3s,1s,2.5s)".
func (c Cell) String() string {
	if c.Topology == "" {
		return fmtSeconds(seconds(c.Propagation))
	}
	ps, err := c.proxies()
	if err != nil {
		return c.Topology
	}
	slices.SortStableFunc(ps, func(a, b Proxy) int { return cmp.Compare(a.Delay, b.Delay) })
	var ds []string
	for _, p := range ps {
		d := fmtSeconds(seconds(p.Delay))
		if p.Share < 0.1 {
			d += fmt.Sprintf(" %.0f%%", p.Share*100)
		}
		ds = append(ds, d)
	}
	return c.Topology + " (" + strings.Join(ds, ",") + ")"
}

// DrainMargin is how much longer than the propagation delay the fixed-drain scenario drains.
const DrainMargin = 500 * time.Millisecond

// DrainitDefaultDrain is drainit's default --drain-delay (internal/config); a test keeps the two
// in step.
const DrainitDefaultDrain = 5 * time.Second

// PreStopSleep is the textbook preStop: exec sleep 5.
const PreStopSleep = 5 * time.Second

// AdaptiveQuiet is drainit's default --drain-quiet (internal/config), which the adaptive scenario
// runs with; a test keeps the two in step.
const AdaptiveQuiet = time.Second

// AdaptiveSlack is what the adaptive drain's claim allows beyond propagation + quiet for the pod
// to stop: a poll interval to see the last connection, SIGTERM, and the app finishing its
// in-flight requests (issue 6: "within propagation + quiet + 0.5 s").
const AdaptiveSlack = 500 * time.Millisecond

// quietMaxStop is the 1 s quiet period's claim in cell c (issue 6): propagation + quiet + slack.
func quietMaxStop(c Cell) time.Duration { return c.Propagation + AdaptiveQuiet + AdaptiveSlack }

// The automatic quiet period's targets (issue 40, which re-based issue 16's D_last + 0.3 s: the
// simulation showed it infeasible at zero loss), on the stop duration beyond the last proxy's
// delay: every stop within AutoFastSlack from AutoFastRate new connections a second at the pod,
// and the median stop within AutoSlowSlack below (the 1 s quiet period's usual D + 1.2 s).
const (
	AutoFastRate  = 200
	AutoFastSlack = 600 * time.Millisecond
	AutoSlowSlack = 1200 * time.Millisecond
)

// autoMaxStop is the automatic quiet period's bound on every stop in cell c: from AutoFastRate.
// Without a cell rate (the load of Config.Rate, split over the pods) there is no rate to hold it
// to: the slow target, autoMedianStop.
func autoMaxStop(c Cell) time.Duration {
	if c.Rate >= AutoFastRate {
		return c.Propagation + AutoFastSlack
	}
	return 0
}

// autoMedianStop is the automatic quiet period's bound on the median stop in cell c: below
// AutoFastRate.
func autoMedianStop(c Cell) time.Duration {
	if c.Rate >= AutoFastRate {
		return 0
	}
	return c.Propagation + AutoSlowSlack
}

// autoOutsideModel: a straggler carrying less than half of what the other proxies leave is a step
// the automatic quiet period cannot tell from the end (docs/adaptive-drain.md, "The automatic quiet
// period").
func autoOutsideModel(c Cell) string {
	if c.Topology == "straggler" {
		return "a 2% straggler: outside the automatic quiet period's model"
	}
	return ""
}

// l7OutsideModel: counting new connections, an adaptive drain behind a pooling L7 proxy sees
// none and ends after its quiet period whatever the proxy still routes (bench/L7PROXY.md).
func l7OutsideModel(Cell) string {
	return "a pooling L7 proxy opens no new connection: counting connections, the drain sees no traffic (--drain-watch requests does)"
}

// DrainGrace is the grace period of the scenarios that compare fixed and adaptive drains: the
// same for all of them, and room for the longest drain (drainit's default --drain-max of 15 s
// plus its 2 s kill margin).
const DrainGrace = 20 * time.Second

// NginxStopSignal is what an image FROM nginx declares as its STOPSIGNAL, and so what the
// runtime sends its PID 1: nginx's graceful stop.
const NginxStopSignal = syscall.SIGQUIT

// drainitPreStop is a drainit scenario with the httpGet preStop and a grace period of DrainGrace.
func drainitPreStop(key, name string, drain func(time.Duration) time.Duration, args ...string) Scenario {
	return Scenario{Key: key, Name: name, Init: Drainit, PreStop: HTTPPreStop, Drain: drain, Grace: DrainGrace,
		DrainitArgs: func(time.Duration) []string { return args }}
}

func constant(d time.Duration) func(time.Duration) time.Duration {
	return func(time.Duration) time.Duration { return d }
}

// Scenarios returns every scenario the harness knows, in table order (a fresh slice: callers may
// change it).
func Scenarios() []Scenario {
	return []Scenario{
		{Key: "bare-naive", Name: "bare, naive app", Init: Bare, Naive: true},
		{Key: "bare-graceful", Name: "bare, graceful app", Init: Bare},
		{Key: "tini", Name: "tini, graceful app", Init: Tini},
		{Key: "dumb-init", Name: "dumb-init, graceful app", Init: DumbInit},
		{Key: "prestop-sleep", Name: "preStop exec sleep 5, graceful", Init: Bare, PreStop: ExecSleep,
			Drain: constant(PreStopSleep)},
		{Key: "drainit-prestop", Name: "drainit, preStop httpGet, drain p+0.5s", Init: Drainit, PreStop: HTTPPreStop,
			Drain: func(p time.Duration) time.Duration { return p + DrainMargin },
			DrainitArgs: func(p time.Duration) []string {
				return []string{"--drain-delay", (p + DrainMargin).String()}
			}},
		{Key: "drainit-default", Name: "drainit defaults (SIGTERM, 5s drain)", Init: Drainit,
			Drain: constant(DrainitDefaultDrain)},
		// Issue 6: the adaptive drain beside fixed delays, all with the httpGet preStop and the
		// same grace period. Adaptive drains as long as new connections keep coming, then the
		// quiet period: p + quiet is its nominal drain, and its claim is on the stop duration.
		func() Scenario {
			s := drainitPreStop("drainit-adaptive", "drainit, preStop httpGet, adaptive drain, quiet 1s",
				func(p time.Duration) time.Duration { return p + AdaptiveQuiet },
				"--drain", "adaptive", "--drain-quiet", AdaptiveQuiet.String())
			s.MaxStop = quietMaxStop
			return s
		}(),
		// Issue 16: the quiet period that follows the traffic. Its nominal drain is the
		// propagation delay; its claim is on the stop duration (autoMaxStop, autoMedianStop).
		func() Scenario {
			s := drainitPreStop("drainit-auto", "drainit, preStop httpGet, adaptive drain, quiet auto",
				func(p time.Duration) time.Duration { return p },
				"--drain", "adaptive", "--drain-quiet", "auto")
			s.MaxStop, s.MedianStop, s.OutsideModel = autoMaxStop, autoMedianStop, autoOutsideModel
			return s
		}(),
		drainitPreStop("drainit-fixed5", "drainit, preStop httpGet, fixed 5s drain", constant(5*time.Second),
			"--drain", "fixed", "--drain-delay", "5s"),
		drainitPreStop("drainit-fixed10", "drainit, preStop httpGet, fixed 10s drain", constant(10*time.Second),
			"--drain", "fixed", "--drain-delay", "10s"),
		// Behind a pooling L7 proxy (bench/L7PROXY.md): the adaptive drain with a 1 s quiet period,
		// counting new connections, which the proxy does not open (the known limitation: it sees
		// silence from the start and ends after the quiet period, so its nominal drain is that),
		// and counting requests on open connections too, which claims what the L4 one does.
		func() Scenario {
			s := drainitPreStop("l7-connections", "L7 pooled: drainit adaptive, quiet 1s, counts connections",
				constant(AdaptiveQuiet), "--drain", "adaptive", "--drain-quiet", AdaptiveQuiet.String())
			s.Pooled, s.OutsideModel = true, l7OutsideModel
			return s
		}(),
		func() Scenario {
			s := drainitPreStop("l7-requests", "L7 pooled: drainit adaptive, quiet 1s, --drain-watch requests",
				func(p time.Duration) time.Duration { return p + AdaptiveQuiet },
				"--drain", "adaptive", "--drain-quiet", AdaptiveQuiet.String(), "--drain-watch", "requests")
			s.Pooled = true
			s.MaxStop = quietMaxStop
			return s
		}(),
		// A real nginx, stopped the way the runtime stops an image FROM nginx: SIGQUIT, no
		// preStop. Bare, nginx closes its listener at once (it is graceful otherwise); behind
		// drainit with --stop-signal QUIT, that SIGQUIT starts the drain and nginx gets its
		// SIGQUIT after it.
		{Key: "nginx-bare", Name: "nginx bare (SIGQUIT)", Init: Bare, App: Nginx, StopSignal: NginxStopSignal},
		{Key: "nginx-drainit", Name: "nginx + drainit (SIGQUIT), drain p+0.5s", Init: Drainit, App: Nginx,
			StopSignal: NginxStopSignal,
			Drain:      func(p time.Duration) time.Duration { return p + DrainMargin },
			DrainitArgs: func(p time.Duration) []string {
				return []string{"--stop-signal", "QUIT", "--drain-delay", (p + DrainMargin).String()}
			}},
		{Key: "nginx-adaptive", Name: "nginx + drainit (SIGQUIT), adaptive drain", Init: Drainit, App: Nginx,
			StopSignal: NginxStopSignal, Grace: DrainGrace,
			Drain: func(p time.Duration) time.Duration { return p + AdaptiveQuiet },
			DrainitArgs: func(time.Duration) []string {
				return []string{"--stop-signal", "QUIT", "--drain", "adaptive", "--drain-quiet", AdaptiveQuiet.String()}
			},
			MaxStop: quietMaxStop},
	}
}

// NginxKeys returns the keys of the scenarios that run a real nginx instead of the test app.
func NginxKeys() []string {
	return []string{"nginx-bare", "nginx-drainit", "nginx-adaptive"}
}

// L7Keys returns the keys of the scenarios behind pooling L7 proxies: the adaptive drain with a
// 1 s quiet period counting new connections (outside its model there) and counting requests.
func L7Keys() []string {
	return []string{"l7-connections", "l7-requests"}
}

// DrainKeys returns the keys of the scenarios that compare the adaptive drains, with the
// automatic quiet period and with a 1 s one, with fixed delays (issues 6 and 16), then the
// adaptive drains behind pooling L7 proxies (L7Keys), for `rollout -scenarios drains` and the
// benchmark.
func DrainKeys() []string {
	return append([]string{"drainit-auto", "drainit-adaptive", "drainit-fixed5", "drainit-fixed10"}, L7Keys()...)
}

// DefaultKeys returns the keys of the scenarios compared unless told otherwise: issue 5's six,
// then the adaptive drains beside fixed 5 s and 10 s drains and behind pooling L7 proxies
// (DrainKeys), then a real nginx bare and behind drainit (NginxKeys).
func DefaultKeys() []string {
	keys := append([]string{"bare-naive", "bare-graceful", "tini", "prestop-sleep", "drainit-prestop", "drainit-default"},
		DrainKeys()...)
	return append(keys, NginxKeys()...)
}

// Lookup returns the scenarios named by keys, in the order given.
func Lookup(keys []string) ([]Scenario, error) {
	all := Scenarios()
	var out []Scenario
	for _, k := range keys {
		k = strings.TrimSpace(k)
		found := false
		for _, s := range all {
			if s.Key == k {
				out = append(out, s)
				found = true
				break
			}
		}
		if !found {
			var known []string
			for _, s := range all {
				known = append(known, s.Key)
			}
			return nil, fmt.Errorf("unknown scenario %q (known: %s)", k, strings.Join(known, ", "))
		}
	}
	return out, nil
}

// drain is s.Drain(p), or zero.
func (s Scenario) drain(p time.Duration) time.Duration {
	if s.Drain == nil {
		return 0
	}
	return s.Drain(p)
}

// Expectation is what a scenario should show at a propagation delay.
type Expectation int

// The expectations the checks hold scenarios to.
const (
	NoExpectation Expectation = iota
	ExpectLoss                // told to stop at once with propagation >= 1s: clients must lose requests
	ExpectNoLoss              // graceful and drains at least as long as propagation: nothing lost
)

// Expect is what s should show at propagation delay p (with proxies, the last one's delay). A scenario that tells the app to stop at
// once with a propagation delay of 1 s or more must show failures: if it does not, the harness
// cannot see the problem it exists to show.
func (s Scenario) Expect(p time.Duration) Expectation {
	d := s.drain(p)
	switch {
	case d == 0 && p >= time.Second:
		return ExpectLoss
	case d > 0 && d >= p && !s.Naive:
		return ExpectNoLoss
	}
	return NoExpectation
}
