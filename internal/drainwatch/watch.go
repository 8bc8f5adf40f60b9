package drainwatch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/drainit/drainit/internal/config"
)

// Defaults for the zero values of Config.
const (
	DefaultQuiet = time.Second      // no new connection for this long ends the drain
	DefaultMax   = 15 * time.Second // the drain ends at this, whatever the traffic

	// DefaultInterval is the shortest time between two polls: at the CPU budget (cpuBudget), a
	// poll may cost 2 ms; a costlier one puts the next off to 50 times its cost. The costs per
	// method and table size are in docs/adaptive-drain.md, "Cost".
	DefaultInterval = 100 * time.Millisecond

	cpuBudget = 0.02

	// pollOverhead is the most of the process's CPU between two polls that is charged to a poll
	// beyond its sample (the timer, the wake-up, the syscalls around it). The rest is other
	// work's (an orphan storm, clients of the control server): charged to the drain, it spaced
	// the polls seconds apart, and sock-diag missed connections between them
	// (docs/adaptive-drain.md, "Cost").
	pollOverhead = time.Millisecond

	// setupBudgeted is the most of the setup's CPU (finding what to watch) that the polls make
	// up for: held back in full, a big app's setup put the first poll seconds late.
	setupBudgeted = 5 * time.Millisecond
)

// Config is what Start watches and when the drain ends.
type Config struct {
	// AppPID is the root of the app's process tree: the listening sockets it and its descendants
	// hold are watched (found by socket inode in /proc/PID/fd).
	AppPID int
	// Adopter, when not zero, is the subreaper the app runs under (drainit): the processes under
	// its other children count as the app's too, for a process the app started and left (a
	// daemon that double-forked) is reparented to it and may be the one serving.
	Adopter int
	// Ports, when not empty, are watched instead (--drain-ports): every listening socket of the
	// network namespace that one of them matches.
	Ports []config.Endpoint
	// The drain ends once no new connection has arrived for Quiet (and Min has passed), or at
	// Max. Zero: DefaultQuiet, 0 and DefaultMax.
	Quiet, Min, Max time.Duration
	// Requests counts, beside new connections, the open connections that received data since
	// the last poll (--drain-watch requests): requests that a proxy pooling connections to the
	// pod routes over them.
	Requests bool
	// Auto replaces Quiet with a silence that follows the traffic (--drain-quiet auto): long
	// enough that traffic still routed at half the recent rate would have broken it with
	// probability under AutoEpsilon.
	Auto bool
	// History, with Auto, is the traffic before the drain (Record); Start stops it. nil: the
	// estimate rests on the drain's own arrivals.
	History *History
	// Interval is the shortest time between polls (zero: DefaultInterval); polls are put off
	// further when they are costly, to stay within 2% of a core.
	Interval time.Duration
	// SelfAccepted, if not nil, returns how many connections drainit's own servers (the control
	// server) have accepted so far. It lets the cheap passive-opens method run when drainit
	// listens too: without it, drainit's own listener makes the namespace shared.
	SelfAccepted func() uint64
	// Setup, if not nil, receives what the drain watches once it is found (also when the watch
	// is unavailable for listeners it cannot watch). It must have room for one value: the watch
	// never blocks on it.
	Setup chan<- Setup
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// stepGuard, when not zero, replaces AutoStepGuard (the simulation's sweep).
	stepGuard float64
}

// Validate checks the durations (zero ones take their defaults), so that a configuration can be
// checked before there is an app to watch.
func (c Config) Validate() error {
	switch {
	case c.Quiet < 0, c.Min < 0, c.Max < 0, c.Interval < 0:
		return fmt.Errorf("negative duration (quiet %s, min %s, max %s, interval %s)", c.Quiet, c.Min, c.Max, c.Interval)
	case c.Min > c.withDefaults().Max:
		return fmt.Errorf("the minimum %s exceeds the maximum %s", c.Min, c.withDefaults().Max)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Quiet == 0 {
		c.Quiet = DefaultQuiet
	}
	if c.Max == 0 {
		c.Max = DefaultMax
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Reason is why the drain ended.
type Reason string

// The reasons.
const (
	// ReasonQuiet: no new connection for the quiet period.
	ReasonQuiet Reason = "quiet"
	// ReasonMax: connections kept arriving until the maximum.
	ReasonMax Reason = "max"
	// ReasonUnavailable: the TCP table cannot be watched, or the app listens where the watch
	// cannot see (UDP, a UNIX socket: Result.Err says why, Result.Unwatchable has those
	// listeners); the caller falls back to the fixed delay.
	ReasonUnavailable Reason = "unavailable"
)

// Method is how new connections were counted.
type Method string

// The methods, chosen by Start in this order.
const (
	// MethodPassiveOpens: the network namespace's TCP PassiveOpens counter (/proc/net/snmp),
	// when every listening socket in it is watched (or drainit's own, see
	// Config.SelfAccepted). It counts every connection, however short-lived.
	MethodPassiveOpens Method = "passive-opens"
	// MethodSockDiag: the TCP table through netlink sock_diag, filtered by port in the kernel.
	MethodSockDiag Method = "sock-diag"
	// MethodProcNet: the TCP table read from /proc/net/tcp and /proc/net/tcp6.
	MethodProcNet Method = "proc-net-tcp"
)

// Result is how the drain ended.
type Result struct {
	Reason   Reason
	NewConns int           // new connections seen during the drain
	Elapsed  time.Duration // from Start to the end
	// Baseline is how long after Start the baseline was taken: a connection that came in
	// between counts as there already, not as new (on a loaded machine, tens of milliseconds).
	Baseline time.Duration
	Method   Method            // "" if unavailable before anything was watched
	Watched  []config.Endpoint // the listening endpoints watched
	Polls    int
	Interval time.Duration // the longest time between two polls
	// Silence is how long before the end the last new connection was seen (or the baseline
	// taken, when none came): the quiet the drain waited.
	Silence time.Duration
	// Auto, with Config.Auto: the traffic the end was judged on, and whether the history before
	// the drain was used (HistoryUsed), and which (HistoryFrom).
	Auto        *Estimate
	HistoryUsed bool
	HistoryFrom string
	// Note says, for the log, why a drain ended at its maximum with Config.Auto: no arrivals to
	// rest a rate on, or a silence needed that runs past the maximum.
	Note string
	// Busy, when the drain ended quiet counting new connections only, is how many open
	// connections received data during the silence it waited (-1: unknown): requests still
	// routed to the pod over connections a proxy keeps open, which that count cannot see.
	Busy int
	// Requests says the drain counted requests on open connections too (Config.Requests), and
	// OpenData how often: an open connection that received data between two polls counts once
	// (NewConns does not include them).
	Requests bool
	OpenData int
	// CPU is drainit's CPU time (the whole process's, user and system) from Start to the end,
	// zero when unknown.
	CPU time.Duration
	Err error // with ReasonUnavailable: why
	// Unwatchable, with ReasonUnavailable, are the app's listeners the watch cannot see when
	// they are why (Err is then an *UnwatchableError).
	Unwatchable []Listener
}

// Start watches for new connections to the app's listening sockets and reports, once, when the
// drain should end. It returns at once; the work happens in one goroutine of its own.
//
// The channel has room for the Result, so the goroutine never blocks on it: it sends at most
// one Result and then closes the channel. Cancelling ctx ends the watch within one poll and
// closes the channel without a Result (a Result already sent stays readable). If nothing can be
// watched (no Linux, no readable TCP table, no listening socket found, a UDP socket the app
// serves on, a bad Config), the Result is ReasonUnavailable, sent as soon as that is known
// (milliseconds: finding the listening sockets reads /proc/PID/fd of the app's processes).
// Elapsed and the quiet and maximum periods count from the call to Start.
func Start(ctx context.Context, cfg Config) <-chan Result {
	cfg = cfg.withDefaults()
	return start(ctx, cfg, systemEnv(cfg))
}

// env is what a watch needs from the system; tests replace it.
type env struct {
	now func() time.Time
	// wait returns at until, or with ctx's error when ctx ends first.
	wait func(ctx context.Context, until time.Time) error
	// measure runs f and returns the CPU time it took (zero when unknown).
	measure func(f func()) time.Duration
	// cpu is the process's CPU time so far (nil: unknown).
	cpu func() time.Duration
	// open finds what to watch, and says what it found.
	open func(cfg Config) (sampler, Setup, error)
}

// sampler is one way of counting new connections.
type sampler interface {
	// sample polls once and returns how many new connections arrived since the previous poll.
	// The first poll is the baseline and returns 0.
	sample() (int, error)
	method() Method
	watched() []config.Endpoint
	close()
}

func start(ctx context.Context, cfg Config, e env) <-chan Result {
	ch := make(chan Result, 1)
	t0 := e.now()
	go func() {
		defer close(ch)
		if r, ok := run(ctx, cfg, e, t0); ok {
			ch <- r
		}
	}()
	return ch
}

// run is the watch: a baseline, then polls until the schedule says the drain is over. It
// returns false when ctx ended first.
func run(ctx context.Context, cfg Config, e env, t0 time.Time) (Result, bool) {
	var res Result
	samples, own := cfg.History.take(e.now()) // stops the sampling whatever happens next
	cpu := e.cpu
	if cpu == nil {
		// Unknown: Result.CPU is zero, and a poll's cost is its sample's.
		cpu = func() time.Duration { return 0 }
	}
	cpu0 := cpu()
	unavailable := func(err error) (Result, bool) {
		res.Reason, res.Err, res.Elapsed = ReasonUnavailable, err, e.now().Sub(t0)
		if u, ok := errors.AsType[*UnwatchableError](err); ok {
			res.Unwatchable = u.Listeners
		}
		return res, ctx.Err() == nil
	}
	if err := cfg.Validate(); err != nil {
		return unavailable(fmt.Errorf("drain watch: %w", err))
	}
	if cfg.AppPID <= 0 && len(cfg.Ports) == 0 {
		return unavailable(errors.New("drain watch: nothing to watch: no app pid and no ports"))
	}
	var (
		s     sampler
		setup Setup
		err   error
	)
	// The drain's own CPU so far: see the budget below. Its setup counts up to setupBudgeted.
	spent := min(e.measure(func() { s, setup, err = e.open(cfg) }), setupBudgeted)
	if _, unwatchable := errors.AsType[*UnwatchableError](err); cfg.Setup != nil && (err == nil || unwatchable) {
		select {
		case cfg.Setup <- setup:
		default:
		}
	}
	if err != nil {
		return unavailable(err)
	}
	defer s.close()
	res.Method, res.Watched, res.Requests, res.Busy = s.method(), s.watched(), cfg.Requests, -1
	prev := e.now()
	cost := e.measure(func() { _, err = s.sample() }) // the baseline: what is there is not new
	spent += cost
	if err != nil {
		return unavailable(fmt.Errorf("taking the baseline (%s): %w", res.Method, err))
	}
	// Quiet counts from the baseline, not from Start: a connection that came in between is in
	// the baseline, unseen as new, and must still be followed by a whole quiet period.
	sch := schedule{start: t0, last: e.now(), quiet: cfg.Quiet, min: cfg.Min, max: cfg.Max}
	sch.prev = sch.last
	res.Baseline = sch.last.Sub(t0)
	if cfg.Auto {
		sch.auto = &estimator{guard: cfg.stepGuard}
		// The counter before the drain is the app's alone only where passive-opens applies; and
		// it counts new connections only, where Requests counts requests on open ones too (its
		// 30 s would cap their rate at its own: see estimator).
		base := s
		if w, ok := s.(wrapped); ok {
			base = w.base()
		}
		c, counted := base.(rawCounter)
		switch {
		case cfg.Requests:
		case counted && len(samples) > 0:
			opens, self := c.counter()
			var arrived time.Time // the end of the last bin with an arrival
			for _, b := range historyBins(samples, counterSample{sch.last, opens, self}) {
				sch.auto.add(b.end, b.span, b.n)
				if b.n > 0 {
					arrived = b.end
				}
			}
			res.HistoryUsed, res.HistoryFrom = true, HistoryPassiveOpens
			// A silence under way when the drain began is silence all the same: the counter
			// has not moved since the sample that last saw it move (a pod that left the
			// Service's endpoints before the kubelet's preStop, as a real kubelet's often has).
			if !arrived.IsZero() && arrived.Before(sch.last) {
				sch.last = arrived
			}
		case !counted && len(own.samples) > 1 && sameEndpoints(own.endpoints, res.Watched):
			// A shared namespace: the app's own listeners' counts, taken as the drain's polls
			// are. They may have missed connections that came and went between two samples,
			// so they do not date a silence: they only give the rate.
			for _, b := range own.bins() {
				sch.auto.add(b.end, b.span, b.n)
			}
			res.HistoryUsed, res.HistoryFrom = true, HistoryAppListeners
		}
	}
	end := func(r Reason, now time.Time) (Result, bool) {
		res.NewConns, res.Silence = sch.newConns, now.Sub(sch.last)
		if o, ok := s.(interface{ openCounts() int }); ok {
			res.OpenData = o.openCounts()
			res.NewConns -= res.OpenData
		}
		if sch.auto != nil {
			est := sch.auto.est
			res.Auto = &est
			if r == ReasonMax {
				switch {
				case !est.Enough:
					res.Note = est.String()
				case sch.last.Add(est.Needed).After(sch.maxAt()):
					res.Note = est.String() + ", which runs past the maximum"
				}
			}
		}
		if b, ok := s.(busyCounter); ok && r == ReasonQuiet && !cfg.Requests {
			if n, ok := b.busyConns(res.Silence); ok {
				res.Busy = n
			}
		}
		res.Reason, res.Elapsed = r, now.Sub(t0)
		res.CPU = cpu() - cpu0
		return res, true
	}
	// A poll costs more than its sample (several times a passive-opens sample): its cost is the
	// more of the sample's thread CPU and the process's CPU over the cycle since the last poll,
	// of the latter no more than pollOverhead beyond the sample.
	cycleCPU := cpu()
	for {
		gap := sch.pollInterval(cfg.Interval)
		if g := time.Duration(float64(cost) / cpuBudget); g > gap {
			gap = g
		}
		// Nor may the drain as a whole run ahead of its budget: finding the listeners and the
		// baseline cost a few milliseconds, which a short drain's polls must make up for.
		if g := t0.Add(time.Duration(float64(spent) / cpuBudget)).Sub(prev); g > gap {
			gap = g
		}
		if err := e.wait(ctx, sch.next(prev, gap)); err != nil {
			return res, false
		}
		now := e.now()
		if !now.Before(sch.maxAt()) && now.Sub(prev) < gap {
			// The maximum came before the budget allows another poll: what arrived since the
			// last one does not change the outcome.
			return end(ReasonMax, now)
		}
		var n int
		cost = e.measure(func() { n, err = s.sample() })
		c := cpu()
		cost, cycleCPU = max(cost, min(c-cycleCPU, cost+pollOverhead)), c
		spent += cost
		if err != nil {
			res.NewConns = sch.newConns
			return unavailable(fmt.Errorf("polling (%s): %w", res.Method, err))
		}
		res.Polls++
		res.Interval = max(res.Interval, now.Sub(prev))
		prev = now
		if r := sch.observe(now, n); r != "" {
			return end(r, now)
		}
	}
}

// Where a History's traffic came from (Result.HistoryFrom).
const (
	// HistoryPassiveOpens: the namespace's PassiveOpens counter, the app's alone.
	HistoryPassiveOpens = "passive-opens"
	// HistoryAppListeners: the app's own listeners' new connections, with sock_diag, in a
	// namespace shared with other listeners.
	HistoryAppListeners = "app-listeners"
)

// sameEndpoints says whether a and b hold the same endpoints, in any order.
func sameEndpoints(a, b []config.Endpoint) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a, func(e config.Endpoint) bool { return !slices.Contains(b, e) })
}

// wrapped is a sampler that adds to another's count (requestSampler).
type wrapped interface {
	base() sampler
}

// busyCounter is a sampler that can say how many open connections received data lately.
type busyCounter interface {
	busyConns(within time.Duration) (int, bool)
}

// rawCounter is a sampler that reads the PassiveOpens counter: its readings at the baseline
// continue the History's.
type rawCounter interface {
	counter() (opens, own uint64)
}

// waitUntil is env.wait on the real clock now, for one goroutine: it reuses one timer, as
// polls can come every few milliseconds.
func waitUntil(now func() time.Time) func(context.Context, time.Time) error {
	var t *time.Timer
	return func(ctx context.Context, until time.Time) error {
		if d := until.Sub(now()); t == nil {
			t = time.NewTimer(d)
		} else {
			t.Reset(d)
		}
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
}
