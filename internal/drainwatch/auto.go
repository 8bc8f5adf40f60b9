package drainwatch

import (
	"fmt"
	"math"
	"time"
)

// The automatic quiet period (Config.Auto, --drain-quiet auto). docs/adaptive-drain.md, "The
// automatic quiet period", has the model and the simulations behind these values.
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
	// AutoMinArrivals is how many arrivals the recent rate rests on: 20 put the estimate within
	// ±45% (two standard deviations), which AutoStepGuard's factor 2 covers. Fewer are judged at
	// a lower bound (fewRate).
	AutoMinArrivals = 20
	// AutoWindow is how far back the estimate may look: the history before the drain (History)
	// is kept this long.
	AutoWindow = 30 * time.Second
	// AutoMinReach is the least time the whole reach's rate is spread over: over less, a burst (a
	// connection pool's 25 connections) can be most of the arrivals, and over a second it is a
	// modest rate.
	AutoMinReach = time.Second
	// AutoMinInterval is the shortest time between polls with the automatic quiet period: polls
	// come every quarter of the silence it needs, between this and Config.Interval (and never
	// closer than the CPU budget allows): 1.5% of a core at this interval.
	AutoMinInterval = 20 * time.Millisecond
	// AutoMaxInterval is the longest time between polls once the rate is known: a poll's count
	// is dated by the poll, so coarse polls would widen the estimate's windows and lower the
	// rate, and lengthen the silence measured after the last arrival.
	AutoMaxInterval = 50 * time.Millisecond
)

// autoK is the silence needed times the rate: ln(1/ε) at the guarded rate.
var autoK = AutoStepGuard * math.Log(1/AutoEpsilon)

// autoFewDelta is the confidence fewRate's lower bound leaves out: the bound is the rate under
// which as many arrivals as were seen had probability autoFewDelta.
const autoFewDelta = 0.05

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
	// Enough says whether there was a rate: one arrival at least in reach before the last.
	Enough bool
	// Basis says what decided the rate or the silence, for the log: "recent", "steady", "few
	// arrivals", "young traffic, spread over 1s", "one burst", or a gap the traffic showed.
	Basis string
}

// String says what the estimate rests on, for the log.
func (e Estimate) String() string {
	if !e.Enough {
		return fmt.Sprintf("%d new connections in %s: too few for silence to prove the traffic stopped", e.Arrivals, e.Window.Round(time.Millisecond))
	}
	return fmt.Sprintf("%.1f new connections/s (%d in %s, %s): %s of silence needed", e.Rate, e.Arrivals, e.Window.Round(time.Millisecond), e.Basis, e.Needed.Round(time.Millisecond))
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

// estimate reads the traffic at the last bin, which holds an arrival. The rate is the lower of
// the recent rate, over the shortest run of bins ending with the last one that holds
// AutoMinArrivals arrivals (it ends at the last arrival, not now: the silence since is what is
// tested, and must not also lower the rate it is tested at), and the whole reach's (steady): a
// burst is not a rate. The oldest bin in reach that holds an arrival counts in neither: its
// arrivals cannot be placed within it. The silence needed is that rate's, but never shorter than
// a gap the traffic has shown and come back after again (repeatedGap): periodic bursts.
func (e *estimator) estimate() Estimate {
	last := e.bins[len(e.bins)-1].end
	lo := len(e.bins) - 1 // the oldest bin in reach
	for lo > 0 && last.Sub(e.bins[lo-1].end.Add(-e.bins[lo-1].span)) <= AutoWindow {
		lo--
	}
	for e.bins[lo].n == 0 {
		lo++ // the oldest bin in reach with an arrival: the last one holds one
	}
	var est Estimate
	rate := math.Inf(1)
	// The first bin's arrivals cannot be placed within it (see steady): the recent rate rests on
	// the bins after it.
	for i, n := len(e.bins)-1, 0; i > lo; i-- {
		n += e.bins[i].n
		if n >= AutoMinArrivals {
			w := last.Sub(e.bins[i].end.Add(-e.bins[i].span))
			rate, est.Arrivals, est.Window, est.Basis = float64(n-1)/w.Seconds(), n, w, "recent"
			break
		}
	}
	r, n, w, basis := e.steady(lo, last)
	if r < rate {
		rate, est.Arrivals, est.Window, est.Basis = r, n, w, basis
	}
	if rate <= 0 || math.IsInf(rate, 1) {
		est.Arrivals, est.Window = n, w
		return est
	}
	est.Rate, est.Enough = rate, true
	k := autoK
	if e.guard > 0 {
		k = e.guard * math.Log(1/AutoEpsilon)
	}
	est.Needed = max(AutoFloor, time.Duration(k/rate*float64(time.Second)))
	if g := e.repeatedGap(lo); g > est.Needed {
		est.Needed, est.Basis = g, fmt.Sprintf("gaps of %s the traffic came back after", g.Round(time.Millisecond))
	}
	return est
}

// steady is the rate over the whole reach, from bin from (the oldest in reach with an arrival) to
// last (the last arrival), with the arrivals and the window it rests on, and what decided it.
// The arrivals of bin from may all have come at its end, so the rate rests on those after it.
// Young or thin traffic (fewer than AutoMinArrivals of them, or within AutoMinReach) is judged
// at a lower bound (fewRate), spread over AutoMinReach at least; arrivals that all fell in one
// bin are no rate at all: nothing tells a burst from one.
func (e *estimator) steady(from int, last time.Time) (rate float64, n int, w time.Duration, basis string) {
	first := e.bins[from]
	after := 0
	for _, b := range e.bins[from+1:] {
		after += b.n
	}
	wAfter := last.Sub(first.end)
	if after >= AutoMinArrivals && wAfter >= AutoMinReach {
		return float64(after-1) / wAfter.Seconds(), after, wAfter, "steady"
	}
	if after == 0 {
		return 0, first.n, first.span, "one burst"
	}
	basis = "few arrivals"
	if wAfter < AutoMinReach {
		basis = fmt.Sprintf("young traffic, spread over %s", AutoMinReach)
	}
	return fewRate(after-1, max(wAfter, AutoMinReach)), after, wAfter, basis
}

// repeatedGap is the longest silence in reach that the traffic came back after at least twice
// (the second longest of them), as the bins bound each from above: from the start of a bin with
// an arrival to the end of the next bin with one, where the bins with none between span at least
// as long as each of the two (adjacent bins say nothing of a gap, and a poll's empty bin after a
// history bin of a second says little). One gap alone is as often as not the pause before the
// traffic began.
func (e *estimator) repeatedGap(lo int) time.Duration {
	var longest, second time.Duration
	prev := -1
	for j := lo; j < len(e.bins); j++ {
		if e.bins[j].n == 0 {
			continue
		}
		if prev >= 0 && j > prev+1 {
			p, q := e.bins[prev], e.bins[j]
			if empty := q.end.Add(-q.span).Sub(p.end); empty >= p.span && empty >= q.span {
				g := q.end.Sub(p.end.Add(-p.span))
				switch {
				case g > longest:
					longest, second = g, longest
				case g > second:
					second = g
				}
			}
		}
		prev = j
	}
	return second
}

// fewRate is the rate k arrivals over w give, lowered when they are fewer than
// AutoMinArrivals-1 (the recent rate's count): by the ratio of Poisson lower bounds (at
// confidence 1-autoFewDelta) to the count, relative to that ratio at AutoMinArrivals-1, so that
// it is continuous there and falls faster than k below it. 0 when k is 0: no evidence.
func fewRate(k int, w time.Duration) float64 {
	if k <= 0 || w <= 0 {
		return 0
	}
	r := float64(k) / w.Seconds()
	if k >= AutoMinArrivals-1 {
		return r
	}
	return r * fewFactor[k]
}

// fewFactor[k], for k < AutoMinArrivals-1: (L(k)/k) / (L(K)/K), K = AutoMinArrivals-1, where L(k)
// is the mean under which k or more Poisson arrivals have probability autoFewDelta.
var fewFactor = func() []float64 {
	lower := func(k int) float64 {
		// P(X >= k | mu) = 1 - sum_{i<k} e^-mu mu^i/i! grows with mu: bisect for autoFewDelta.
		lo, hi := 0.0, float64(k)
		for range 100 {
			mu := (lo + hi) / 2
			term, sum := math.Exp(-mu), 0.0
			for i := range k {
				sum += term
				term *= mu / float64(i+1)
			}
			if 1-sum < autoFewDelta {
				lo = mu
			} else {
				hi = mu
			}
		}
		return lo
	}
	K := AutoMinArrivals - 1
	ref := lower(K) / float64(K)
	f := make([]float64, K)
	for k := 1; k < K; k++ {
		f[k] = lower(k) / float64(k) / ref
	}
	return f
}()
