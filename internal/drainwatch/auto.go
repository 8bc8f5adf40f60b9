package drainwatch

import (
	"fmt"
	"math"
	"time"
)

// The automatic quiet period (Config.Auto, --drain-quiet auto). See the package doc, "The
// automatic quiet period", for the model and why these values.
const (
	// AutoEpsilon is the chance the drain accepts of ending while traffic is still being routed
	// to the pod at half the recent rate (AutoStepGuard): arrivals being Poisson at rate r, a
	// silence s happens with probability exp(-r·s).
	AutoEpsilon = 1e-4
	// AutoStepGuard is by how much the rate may have fallen, unseen, when the silence begins:
	// the silence must be improbable at the recent rate divided by this. Proxies drop the pod
	// one by one, so the traffic fades in steps; each step looks like the start of the end.
	AutoStepGuard = 2
	// AutoFloor is the shortest silence that ends the drain, whatever the rate: a pause of the
	// path the traffic takes (a userspace proxy throttled for a CFS period, 100 ms by default,
	// or stopped for a garbage collection) is a silence that proves nothing, and a connection
	// routed just before its proxy dropped the pod still has its way to travel.
	AutoFloor = 100 * time.Millisecond
	// AutoMinArrivals is how many arrivals the rate estimate must rest on: with fewer, over the
	// whole history (AutoWindow), silence proves nothing and the drain waits for its maximum.
	// 20 arrivals put the estimate within ±45% (two standard deviations, 1/√20 each), which
	// AutoStepGuard's factor 2 covers.
	AutoMinArrivals = 20
	// AutoWindow is how far back the estimate may look: the history before the drain (History)
	// is kept this long.
	AutoWindow = 30 * time.Second
	// AutoMinReach is the least time the estimate's reach must span: over less, a burst (a
	// connection pool's 25 connections) can be most of the arrivals, and over a second it is a
	// modest rate. Traffic that began under a second before the drain ended is too young to
	// judge: the drain waits for its maximum.
	AutoMinReach = time.Second
	// AutoMinInterval is the shortest time between polls with the automatic quiet period: polls
	// come every quarter of the silence it needs, between this and Config.Interval (and never
	// closer than the CPU budget allows). A poll costs drainit ~0.3 ms of CPU in all on a 2-vCPU
	// VM, most of it the Go runtime's sleep and wake-up (0.1 ms for a bare 10 ms sleep there):
	// 1.5% of a core at this interval.
	AutoMinInterval = 20 * time.Millisecond
	// AutoMaxInterval is the longest time between polls once the rate is known: a poll's count
	// is dated by the poll, so coarse polls would widen the estimate's windows and lower the
	// rate, and lengthen the silence measured after the last arrival.
	AutoMaxInterval = 50 * time.Millisecond
)

// autoK is the silence needed times the rate: ln(1/ε) at the guarded rate.
var autoK = AutoStepGuard * math.Log(1/AutoEpsilon)

// bin is how many new connections arrived in (end-span, end].
type bin struct {
	end  time.Time
	span time.Duration
	n    int
}

// Estimate is the automatic quiet period's reading of the traffic at the last arrival.
type Estimate struct {
	// Rate is new connections per second, from Arrivals over Window (0 when too few).
	Rate float64
	// Arrivals is how many new connections the rate rests on (or, when too few, were seen).
	Arrivals int
	// Window is the time they span, ending at the last arrival.
	Window time.Duration
	// Needed is the silence that ends the drain at that rate: AutoStepGuard·ln(1/AutoEpsilon)/Rate,
	// at least AutoFloor. Zero when there were too few arrivals to tell (Enough is false).
	Needed time.Duration
	// Enough says whether the arrivals were enough for a rate: AutoMinArrivals, over
	// AutoMinReach (see estimator.steady).
	Enough bool
}

// String says what the estimate rests on, for the log.
func (e Estimate) String() string {
	if !e.Enough && e.Arrivals >= AutoMinArrivals {
		return fmt.Sprintf("%d new connections in %s: too short a time (< %s) to tell a rate from a burst, for silence to prove the traffic stopped", e.Arrivals, e.Window.Round(time.Millisecond), AutoMinReach)
	}
	if !e.Enough {
		return fmt.Sprintf("%d new connections in %s: too few (< %d) for silence to prove the traffic stopped", e.Arrivals, e.Window.Round(time.Millisecond), AutoMinArrivals)
	}
	return fmt.Sprintf("%.1f new connections/s (%d in %s): %s of silence needed", e.Rate, e.Arrivals, e.Window.Round(time.Millisecond), e.Needed.Round(time.Millisecond))
}

// estimator keeps the arrival counts of the recent past, oldest first: the history before the
// drain (one bin a second) and then one bin per poll. It is pure.
type estimator struct {
	bins []bin
	est  Estimate // at the last bin that held an arrival
	// guard, when not zero, replaces AutoStepGuard: the simulation weighs other values
	// (TestAutoQuietSimulate's "guard" part).
	guard float64
}

// add records n arrivals in (end-span, end] and, when n > 0, estimates anew at end.
func (e *estimator) add(end time.Time, span time.Duration, n int) {
	if span <= 0 {
		return
	}
	e.bins = append(e.bins, bin{end, span, n})
	if n > 0 {
		e.est = e.estimate()
	}
	// Forget what no estimate can reach: bins wholly older than AutoWindow before the last one.
	cut := 0
	for cut < len(e.bins)-1 && e.bins[len(e.bins)-1].end.Sub(e.bins[cut].end) > AutoWindow {
		cut++
	}
	if cut > 0 && cut > len(e.bins)/2 {
		e.bins = append(e.bins[:0], e.bins[cut:]...)
	}
}

// estimate is the rate over the shortest run of bins ending with the last one that holds
// AutoMinArrivals arrivals, within AutoWindow, or over the whole AutoWindow if that is lower.
// The window ends at the last arrival, not now: the silence since is what is being tested, and
// must not also lower the rate it is tested at. Short windows follow the steps of a fading
// traffic: after a step, the rate is the new one as soon as AutoMinArrivals have come at it.
// The whole window keeps a burst from passing for a rate.
func (e *estimator) estimate() Estimate {
	var est Estimate
	last := e.bins[len(e.bins)-1].end
	for i := len(e.bins) - 1; i >= 0; i-- {
		b := e.bins[i]
		if last.Sub(b.end.Add(-b.span)) > AutoWindow {
			break
		}
		est.Arrivals += b.n
		est.Window = last.Sub(b.end.Add(-b.span))
		if est.Arrivals >= AutoMinArrivals {
			est.Enough = true
			break
		}
	}
	if !est.Enough {
		return est
	}
	// The window ends with an arrival by construction: n-1 of them are the ones a rate counts.
	est.Rate = float64(est.Arrivals-1) / est.Window.Seconds()
	// Nor more than over the whole reach: a burst (a client's pool opening its connections at
	// once) is AutoMinArrivals arrivals in a few milliseconds, a rate the traffic does not have.
	r, n, w, ok := e.steady(last)
	if !ok {
		return Estimate{Arrivals: n, Window: w}
	}
	if r < est.Rate {
		est.Rate, est.Arrivals, est.Window = r, n, w
	}
	k := autoK
	if e.guard > 0 {
		k = e.guard * math.Log(1/AutoEpsilon)
	}
	est.Needed = max(AutoFloor, time.Duration(k/est.Rate*float64(time.Second)))
	return est
}

// steady is the rate over the whole reach, AutoWindow back from last (the last arrival), with
// the arrivals and the window it rests on. Its oldest bin that holds an arrival may be mostly the
// silence before the traffic began (the app's start), or a burst: the arrivals after that bin
// are what a rate can rest on, and with AutoMinArrivals of them over AutoMinReach the rate is
// theirs.
//
// Otherwise the reach is young (traffic that began a moment ago) and its first arrivals, or a
// burst after them, may be most of it. The first bin then counts too, over its span, once the
// reach spans AutoMinReach: a burst is spread over that much at least. And the rate is never above the one
// after the first bin (on 2 arrivals at least): a burst and then a trickle is judged at the
// trickle. ok is false otherwise (nothing yet tells a burst from a rate); n and w then say how
// many were seen, in how long.
func (e *estimator) steady(last time.Time) (rate float64, n int, w time.Duration, ok bool) {
	from := -1 // the oldest bin in reach with an arrival
	for j := len(e.bins) - 1; j >= 0; j-- {
		b := e.bins[j]
		if last.Sub(b.end.Add(-b.span)) > AutoWindow {
			break
		}
		if b.n > 0 {
			from = j
		}
	}
	if from < 0 {
		return 0, 0, 0, false
	}
	first := e.bins[from]
	after := 0
	for _, b := range e.bins[from+1:] {
		after += b.n
	}
	// Each window ends with an arrival and starts at a bin's edge: n-1 arrivals fall inside
	// (when the first bin counts, one fewer than in it: the rate errs low).
	wAfter := last.Sub(first.end)
	if after >= AutoMinArrivals && wAfter >= AutoMinReach {
		return float64(after-1) / wAfter.Seconds(), after, wAfter, true
	}
	n, w = after+first.n, wAfter+first.span
	if n < AutoMinArrivals || w < AutoMinReach || wAfter <= 0 {
		return 0, n, max(w, 0), false
	}
	rate = float64(n-1) / w.Seconds()
	if r := float64(after-1) / wAfter.Seconds(); after >= 2 && r < rate {
		rate, n, w = r, after, wAfter
	}
	return rate, n, w, true
}
