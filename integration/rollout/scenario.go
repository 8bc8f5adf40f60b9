package rollout

import (
	"fmt"
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
	// MaxStop, if set, is the longest pod stop duration the scenario claims at propagation delay
	// p: the adaptive drain's promise (propagation + quiet + 0.5 s), checked beside its losses.
	MaxStop func(p time.Duration) time.Duration
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
			s := drainitPreStop("drainit-adaptive", "drainit, preStop httpGet, adaptive drain",
				func(p time.Duration) time.Duration { return p + AdaptiveQuiet },
				"--drain", "adaptive", "--drain-quiet", AdaptiveQuiet.String())
			s.MaxStop = func(p time.Duration) time.Duration { return p + AdaptiveQuiet + AdaptiveSlack }
			return s
		}(),
		drainitPreStop("drainit-fixed5", "drainit, preStop httpGet, fixed 5s drain", constant(5*time.Second),
			"--drain", "fixed", "--drain-delay", "5s"),
		drainitPreStop("drainit-fixed10", "drainit, preStop httpGet, fixed 10s drain", constant(10*time.Second),
			"--drain", "fixed", "--drain-delay", "10s"),
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
			MaxStop: func(p time.Duration) time.Duration { return p + AdaptiveQuiet + AdaptiveSlack }},
	}
}

// NginxKeys returns the keys of the scenarios that run a real nginx instead of the test app.
func NginxKeys() []string {
	return []string{"nginx-bare", "nginx-drainit", "nginx-adaptive"}
}

// DrainKeys returns the keys of the scenarios that compare the adaptive drain with fixed delays
// (issue 6), for `rollout -scenarios drains` and the benchmark.
func DrainKeys() []string {
	return []string{"drainit-adaptive", "drainit-fixed5", "drainit-fixed10"}
}

// DefaultKeys returns the keys of the scenarios compared unless told otherwise: issue 5's six,
// then issue 6's adaptive drain beside fixed 5 s and 10 s drains (DrainKeys), then a real nginx
// bare and behind drainit (NginxKeys).
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

// Expect is what s should show at propagation delay p. A scenario that tells the app to stop at
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
