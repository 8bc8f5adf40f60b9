package drainwatch

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drainit/drainit/internal/config"
)

// poisson returns the arrival times of a Poisson stream, after t0, at rate (per second) from
// from until to, from a seeded generator: the same stream every run.
func poisson(seed uint64, rate float64, from, to time.Duration) []time.Duration {
	r := rand.New(rand.NewPCG(seed, 1))
	var out []time.Duration
	for t := from; ; {
		t += time.Duration(r.ExpFloat64() / rate * float64(time.Second))
		if t > to {
			return out
		}
		out = append(out, t)
	}
}

// proxy is one proxy's share of the traffic to the pod, new connections a second, until it drops
// the pod.
type proxy struct {
	rate  float64
	until time.Duration
}

// steps is a traffic that fades in steps, as proxies drop the pod one by one.
func steps(seed uint64, from time.Duration, proxies ...proxy) []time.Duration {
	var out []time.Duration
	for i, p := range proxies {
		out = append(out, poisson(seed*31+uint64(i), p.rate, from, p.until)...)
	}
	slices.Sort(out)
	return out
}

// counterSystem is a fakeSystem whose sampler reads a counter, as passive-opens does, so that a
// History before the drain is used.
type counterSystem struct{ *fakeSystem }

func (c counterSystem) counter() (uint64, uint64) { return uint64(c.arrivedBy(c.lastSeen)), 0 }

// history is what Record would have sampled, once a second for AutoWindow before t0, of the
// arrivals (those before t0 have negative times).
func (f *fakeSystem) history() *History {
	h := &History{stop: func() {}}
	for at := -AutoWindow; at < 0; at += HistoryEvery {
		h.add(counterSample{at: f.t0.Add(at), opens: uint64(f.arrivedBy(f.t0.Add(at)))})
	}
	return h
}

func (f *fakeSystem) withCounter() env {
	e := f.env()
	e.open = func(Config) (sampler, Setup, error) { return counterSystem{f}, Setup{}, nil }
	return e
}

func lastBefore(arrivals []time.Duration, t time.Duration) time.Duration {
	var last time.Duration
	for _, a := range arrivals {
		if a <= t {
			last = a
		}
	}
	return last
}

// At 200 new connections a second, the drain ends 0.1 s (2·ln(10⁴)/200 = 0.09 s, and the floor)
// after the last one, plus a poll, rather than a fixed second; the result says the rate and
// the silence.
func TestAutoQuietHighRate(t *testing.T) {
	const rate = 200.0
	for seed := range uint64(5) {
		f := newFakeSystem()
		f.arrivals = poisson(seed, rate, 0, time.Second)
		cfg := Config{AppPID: 1, Auto: true}
		r := f.run(t, cfg)
		last := f.arrivals[len(f.arrivals)-1]
		after := r.Elapsed - last
		if r.Reason != ReasonQuiet || r.Auto == nil || !r.Auto.Enough {
			t.Fatalf("seed %d: result %+v, want quiet with an estimate", seed, r)
		}
		if math.Abs(r.Auto.Rate-rate) > 0.45*rate {
			t.Errorf("seed %d: rate %.1f/s, want %.0f/s ±45%%", seed, r.Auto.Rate, rate)
		}
		want := max(AutoFloor, time.Duration(2*math.Log(1e4)/rate*float64(time.Second)))
		if r.Auto.Needed < AutoFloor || r.Auto.Needed > want*3/2 {
			t.Errorf("seed %d: silence needed %s, want about %s", seed, r.Auto.Needed, want)
		}
		// Never before the silence needed; within it and a poll interval plus the poll that saw
		// the last arrival after it (each at most a quarter of the silence needed).
		if after < r.Auto.Needed || after > r.Auto.Needed+2*max(AutoMinInterval, r.Auto.Needed/4) {
			t.Errorf("seed %d: ended %s after the last arrival, want %s plus at most two polls (%s)", seed, after, r.Auto.Needed, r.Auto)
		}
		if r.Silence < r.Auto.Needed {
			t.Errorf("seed %d: reported silence %s is shorter than the needed %s", seed, r.Silence, r.Auto.Needed)
		}
		if after > 200*time.Millisecond {
			t.Errorf("seed %d: ended %s after the last arrival at 200/s, want within 0.2s", seed, after)
		}
		if r.Auto.Rate >= 2*math.Log(1e4)/AutoFloor.Seconds() && r.Auto.Needed != AutoFloor {
			t.Errorf("seed %d: at %.0f/s the silence needed is %s, want the floor %s", seed, r.Auto.Rate, r.Auto.Needed, AutoFloor)
		}
	}
}

// At one connection a second, silence proves nothing within the maximum: the drain waits for
// it, and says why: the silence needed runs past the maximum. With the history before the drain
// it is ~18 s; without it, the drain's own few arrivals are judged at a lower bound, and it is
// longer still.
func TestAutoQuietLowRate(t *testing.T) {
	f := newFakeSystem()
	f.arrivals = poisson(7, 1, -AutoWindow, 2*time.Second)
	cfg := Config{AppPID: 1, Auto: true, Max: 15 * time.Second, History: f.history()}
	r := runEnv(t, cfg, f.withCounter())
	if r.Reason != ReasonMax || r.Elapsed != cfg.Max || !r.HistoryUsed {
		t.Fatalf("result %+v, want max at %s with the history", r, cfg.Max)
	}
	if r.Auto == nil || !r.Auto.Enough || r.Auto.Rate > 2 || !strings.Contains(r.Note, "runs past the maximum") {
		t.Errorf("result %+v (%v), want a rate near 1/s and a note that the silence needed runs past the maximum", r, r.Auto)
	}

	f = newFakeSystem()
	f.arrivals = poisson(7, 1, 0, 2*time.Second)
	r = f.run(t, Config{AppPID: 1, Auto: true, Max: 15 * time.Second})
	if r.Reason != ReasonMax || r.Auto == nil || r.Auto.Needed < 30*time.Second || !strings.Contains(r.Note, "runs past the maximum") {
		t.Fatalf("result %+v (%v), want max with a note that the silence needed (over 30 s) runs past the maximum", r, r.Auto)
	}
	if r.HistoryUsed {
		t.Errorf("no History given, but the result says one was used")
	}
}

// At 20 new connections a second and a 0.2 s propagation delay, the drain sees only a few
// arrivals of its own: the history before the drain gives the rate, and the drain ends about
// 0.9 s (2·ln(10⁴)/20) after the last arrival, as soon as today's fixed 1 s quiet period would.
// A sampler that is not the counter (sock-diag, a shared namespace) cannot use the history: its
// four or so arrivals are judged at a lower bound spread over a second, and the silence needed
// is many seconds, not the maximum by a cliff.
func TestAutoQuietHistory(t *testing.T) {
	for seed := range uint64(5) {
		f := newFakeSystem()
		f.arrivals = poisson(seed, 20, -AutoWindow, 200*time.Millisecond)
		cfg := Config{AppPID: 1, Auto: true, History: f.history()}
		r := runEnv(t, cfg, f.withCounter())
		last := lastBefore(f.arrivals, 200*time.Millisecond)
		if r.Reason != ReasonQuiet || !r.HistoryUsed || r.Auto == nil {
			t.Fatalf("seed %d: result %+v, want quiet from the history", seed, r)
		}
		if r.Elapsed-last > 1200*time.Millisecond || r.Elapsed-last < r.Auto.Needed {
			t.Errorf("seed %d: ended %s after the last arrival (needed %s, %s), want within 1.2s", seed, r.Elapsed-last, r.Auto.Needed, r.Auto)
		}

		f = newFakeSystem()
		f.arrivals = poisson(seed, 20, -AutoWindow, 200*time.Millisecond)
		cfg.History = f.history()
		r = f.run(t, cfg)
		last = lastBefore(f.arrivals, 200*time.Millisecond)
		if r.HistoryUsed || r.Auto == nil || r.Reason == ReasonQuiet && (r.Auto.Needed < 5*time.Second || r.Elapsed-last < r.Auto.Needed) {
			t.Errorf("seed %d: result %+v (%v), want no history, and the maximum or 5 s of silence needed at least and waited", seed, r, r.Auto)
		}
	}
}

// The pod's connections stopped before the drain began (its endpoints removed before the
// kubelet's preStop, as on a real kubelet when another pod serves): the silence since the history
// sample that last saw a new connection counts, and the drain ends at its first poll. When that
// sample is the baseline's (a connection in the last second), the silence counts from there.
func TestAutoQuietSilenceBeforeTheDrain(t *testing.T) {
	for seed := range uint64(5) {
		f := newFakeSystem()
		f.arrivals = poisson(seed, 50, -AutoWindow, -1500*time.Millisecond)
		r := runEnv(t, Config{AppPID: 1, Auto: true, History: f.history()}, f.withCounter())
		if r.Reason != ReasonQuiet || r.Auto == nil || !r.HistoryUsed {
			t.Fatalf("seed %d: result %+v, want quiet from the history", seed, r)
		}
		// The sample at -1 s saw the last arrival (at -1.5 s at the latest): a second of silence
		// before the drain, more than the ~0.37 s needed at 50/s.
		if r.Elapsed >= r.Auto.Needed || r.Silence < time.Second {
			t.Errorf("seed %d: ended %s after the drain began with a silence of %s (needed %s), want at its first poll, the silence from the sample at -1 s", seed, r.Elapsed, r.Silence, r.Auto.Needed)
		}

		f = newFakeSystem()
		f.arrivals = poisson(seed, 50, -AutoWindow, -300*time.Millisecond)
		r = runEnv(t, Config{AppPID: 1, Auto: true, History: f.history()}, f.withCounter())
		if r.Reason != ReasonQuiet || r.Auto == nil || r.Elapsed < r.Auto.Needed {
			t.Errorf("seed %d: result %+v (%v), want quiet no sooner than the silence needed after the baseline: the last second had an arrival", seed, r, r.Auto)
		}
	}
}

// Traffic that began shortly before the drain (a pod stopped soon after it started serving):
// its history since the app's start holds a few bins. The first bin's arrivals may all have come
// at its end, so the traffic is as old as that bin's end. With a second after it, the drain ends
// on the silence; with less, the traffic is young: the arrivals after the first bin are spread
// over a second (a burst of them would be a modest rate), and the drain ends later than it would
// on a steady traffic of that rate, never before the last arrival.
func TestAutoQuietYoungTraffic(t *testing.T) {
	for seed := range uint64(20) {
		for _, c := range []struct {
			since time.Duration // the app's start, and its traffic's
			quiet bool
		}{{-2200 * time.Millisecond, true}, {-500 * time.Millisecond, false}} {
			f := newFakeSystem()
			f.arrivals = poisson(seed, 50, c.since, 200*time.Millisecond)
			h := &History{stop: func() {}} // sampled since the app's start, as Record does
			for at := c.since; at < 0; at += historyNext(at - c.since) {
				h.add(counterSample{at: f.t0.Add(at), opens: uint64(f.arrivedBy(f.t0.Add(at)))})
			}
			r := runEnv(t, Config{AppPID: 1, Auto: true, Max: 5 * time.Second, History: h}, f.withCounter())
			last := f.arrivals[len(f.arrivals)-1]
			switch {
			case c.quiet && (r.Reason != ReasonQuiet || r.Elapsed < last || r.Elapsed > last+time.Second):
				t.Errorf("seed %d, traffic since %s: result %+v (%v), want quiet within a second of the last arrival at %s", seed, c.since, r, r.Auto, last)
			case !c.quiet && (r.Auto == nil || r.Elapsed < last || r.Auto.Rate > float64(len(f.arrivals))/AutoMinReach.Seconds() || !strings.Contains(r.Auto.Basis, "young") && r.Auto.Basis != "the arrivals after the first"):
				t.Errorf("seed %d, traffic since %s: result %+v (%v), want the %d arrivals judged young, spread over %s", seed, c.since, r, r.Auto, len(f.arrivals), AutoMinReach)
			}
		}
	}
}

// Traffic that fades in steps (three proxies dropping the pod at 0.3 s, 1 s and 2.5 s, the last
// ones carrying half of what was left) never ends the drain before the last arrival, over many
// streams: the step guard holds the first silence after each step to the rate before it, halved.
func TestAutoQuietSteps(t *testing.T) {
	early := 0
	const runs = 300
	for seed := range uint64(runs) {
		f := newFakeSystem()
		f.arrivals = steps(seed, -AutoWindow, proxy{100, 300 * time.Millisecond}, proxy{100, time.Second}, proxy{100, 2500 * time.Millisecond})
		r := runEnv(t, Config{AppPID: 1, Auto: true, History: f.history()}, f.withCounter())
		last := f.arrivals[len(f.arrivals)-1]
		if r.Reason != ReasonQuiet {
			t.Fatalf("seed %d: result %+v, want quiet", seed, r)
		}
		if r.Elapsed < last {
			early++
			t.Logf("seed %d: ended at %s, before the last arrival at %s (%s)", seed, r.Elapsed, last, r.Auto)
		}
		// The rate at the end is the last proxy's (100/s): 0.18 s of silence.
		if r.Elapsed > last+400*time.Millisecond {
			t.Errorf("seed %d: ended %s after the last arrival, want within 0.4s (%s)", seed, r.Elapsed-last, r.Auto)
		}
	}
	if early > 0 {
		t.Errorf("%d of %d drains ended before the last arrival", early, runs)
	}
}

// A burst of new connections (a client's pool opening 25 at once, or a client that means to end
// the drain early) on a traffic of 5/s does not make the rate look like thousands a second: the
// drain waits for what 5/s proves, and never ends while that traffic is still routed.
func TestAutoQuietBurst(t *testing.T) {
	for seed := range uint64(50) {
		f := newFakeSystem()
		f.arrivals = poisson(seed, 5, -AutoWindow, time.Second)
		for i := range 25 {
			f.arrivals = append(f.arrivals, 100*time.Millisecond+time.Duration(i)*200*time.Microsecond)
		}
		slices.Sort(f.arrivals)
		r := runEnv(t, Config{AppPID: 1, Auto: true, History: f.history(), Max: 15 * time.Second}, f.withCounter())
		last := f.arrivals[len(f.arrivals)-1]
		if r.Elapsed < last {
			t.Fatalf("seed %d: ended at %s, before the last arrival at %s (%s)", seed, r.Elapsed, last, r.Auto)
		}
		if r.Auto == nil || r.Auto.Rate > 10 {
			t.Errorf("seed %d: judged at %v, want the traffic's ~5/s", seed, r.Auto)
		}
	}
	// The burst is the first traffic the drain can see (no history, or none within its reach),
	// with 5/s after it, routed past the maximum. In one poll nothing tells a rate from it: the
	// drain waits for its maximum. Spread over two polls, the second part counts, but the 20
	// arrivals after the first poll take a second or more to come: the rate is overstated a few
	// times, the silence needed is near a second, and never the floor.
	for seed := range uint64(20) {
		for _, spread := range []time.Duration{time.Millisecond, 150 * time.Millisecond} {
			for _, history := range []bool{false, true} {
				f := newFakeSystem()
				f.arrivals = poisson(seed, 5, 300*time.Millisecond, 10*time.Second)
				for i := range 25 {
					f.arrivals = append(f.arrivals, 150*time.Millisecond+spread*time.Duration(i)/25)
				}
				slices.Sort(f.arrivals)
				cfg := Config{AppPID: 1, Auto: true, Max: 5 * time.Second}
				var r Result
				if history {
					cfg.History = f.history()
					r = runEnv(t, cfg, f.withCounter())
				} else {
					r = f.run(t, cfg)
				}
				switch {
				case spread < 100*time.Millisecond && r.Reason != ReasonMax:
					t.Errorf("seed %d, burst in one poll, history %v: result %+v (%v), want the maximum", seed, history, r, r.Auto)
				case r.Reason != ReasonMax && (r.Auto == nil || r.Auto.Needed < 500*time.Millisecond):
					t.Errorf("seed %d, burst over two polls, history %v: result %+v (%v), want the maximum or 0.5 s of silence at least", seed, history, r, r.Auto)
				}
			}
		}
	}
}

// A straggler with 2% of the traffic is outside the model (a step to less than half): the
// drain cannot tell it from the end, and the test documents that it ends early, as the package
// doc says; --drain-min covers a straggler whose delay is known.
func TestAutoQuietStragglerIsOutsideTheModel(t *testing.T) {
	early := 0
	const runs = 50
	for seed := range uint64(runs) {
		f := newFakeSystem()
		f.arrivals = steps(seed, -AutoWindow, proxy{196, time.Second}, proxy{4, 2500 * time.Millisecond})
		r := runEnv(t, Config{AppPID: 1, Auto: true, History: f.history()}, f.withCounter())
		if r.Elapsed < f.arrivals[len(f.arrivals)-1] {
			early++
		}
		// --drain-min at the straggler's delay holds the drain until it is over.
		f = newFakeSystem()
		f.arrivals = steps(seed, -AutoWindow, proxy{196, time.Second}, proxy{4, 2500 * time.Millisecond})
		r = runEnv(t, Config{AppPID: 1, Auto: true, Min: 2500 * time.Millisecond, History: f.history()}, f.withCounter())
		if r.Elapsed < 2500*time.Millisecond {
			t.Errorf("seed %d: with --drain-min 2.5s the drain ended at %s", seed, r.Elapsed)
		}
	}
	if early < runs/2 {
		t.Errorf("only %d of %d drains ended before the straggler's last arrival: the doc says most do", early, runs)
	}
}

// The polls come every quarter of the silence needed (AutoMinInterval at least) once the rate is
// known: at 200/s, whose silence needed is the 100 ms floor, every 25 ms, not every 100 ms.
func TestAutoQuietPolls(t *testing.T) {
	f := newFakeSystem()
	f.arrivals = poisson(3, 200, -AutoWindow, time.Second)
	r := runEnv(t, Config{AppPID: 1, Auto: true, History: f.history()}, f.withCounter())
	// A poll is moved to the end when that is due within the gap after it: two quarters at most.
	if r.Reason != ReasonQuiet || r.Interval > r.Auto.Needed/2+time.Millisecond || r.Interval < AutoMinInterval {
		t.Fatalf("result %+v: longest poll gap %s, want at most half of %s, at least %s", r, r.Interval, r.Auto.Needed, AutoMinInterval)
	}
	// The CPU budget still rules: polls costing 1 ms come 50 ms apart.
	f = newFakeSystem()
	f.arrivals = poisson(3, 200, -AutoWindow, time.Second)
	f.cost = time.Millisecond
	runEnv(t, Config{AppPID: 1, Auto: true, History: f.history()}, f.withCounter())
	for i := 1; i < len(f.polls); i++ {
		if gap := f.polls[i].Sub(f.polls[i-1]); gap < time.Duration(float64(f.cost)/cpuBudget) {
			t.Fatalf("polls %s apart at %s each: over the CPU budget", gap, f.cost)
		}
	}
}

func TestEstimator(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	var e estimator
	e.add(at(1000), time.Second, 10)
	// All the arrivals in one bin: a burst at its end, for all it says.
	if e.est.Enough || e.est.Arrivals != 10 || !strings.Contains(e.est.String(), "too few") {
		t.Fatalf("10 arrivals in one bin: %+v (%s), want no rate", e.est, e.est)
	}
	e.add(at(1100), 100*time.Millisecond, 0) // a silent poll changes nothing
	if e.est.Arrivals != 10 {
		t.Fatalf("a silent poll re-estimated: %+v", e.est)
	}
	e.add(at(1200), 100*time.Millisecond, 11)
	// 11 after the first bin, in 0.2 s: young, spread over a second, and judged at a lower
	// bound: 10·fewFactor[10]/s (not the 20/1.2 s of all 21 over 1.2 s: the first bin's 10 may
	// have come at its end).
	if !e.est.Enough || e.est.Arrivals != 11 || math.Abs(e.est.Rate-10*fewFactor[10]) > 1e-9 || !strings.Contains(e.est.Basis, "young") {
		t.Fatalf("21 arrivals in 1.2s, 11 after the first second: %+v", e.est)
	}
	if want := time.Duration(autoK / (10 * fewFactor[10]) * float64(time.Second)); e.est.Needed != want {
		t.Errorf("needed %s, want %s", e.est.Needed, want)
	}
	// A second later, 30 more: 41 after the first bin over 1.2 s, a steady (41-1)/1.2 = 33/s,
	// and the last second's 30 alone, the recent rate: (30-1)/1 = 29/s, the lower.
	e.add(at(2200), time.Second, 30)
	if e.est.Arrivals != 30 || e.est.Window != time.Second || math.Abs(e.est.Rate-29) > 1e-9 || e.est.Basis != "recent" {
		t.Fatalf("41 arrivals in 1.2s after the first bin, 30 in the last second: %+v", e.est)
	}
	// A burst is not a rate: 40 arrivals in 10 ms are judged at the rate over the whole reach
	// after the first bin, (81-1)/1.21 s, not 4,000/s.
	e.add(at(2210), 10*time.Millisecond, 40)
	if e.est.Window != 1210*time.Millisecond || e.est.Arrivals != 81 || math.Abs(e.est.Rate-80/1.21) > 1e-9 {
		t.Errorf("40 arrivals in 10ms after 41 in 1.2s: %+v, want the rate over the last 1.21s", e.est)
	}
	// The shortest window with enough arrivals follows the steps down, once enough arrivals
	// have come at the new rate: 20 in the last 2 s (10/s) after the 81 above.
	e.add(at(4210), 2*time.Second, 20)
	if e.est.Window != 2*time.Second || math.Abs(e.est.Rate-19/2.0) > 1e-9 {
		t.Errorf("20 arrivals in the last 2s after a busier second: %+v, want the last 2s' rate", e.est)
	}
	// A young reach (traffic that began a moment ago, no history) is spread over AutoMinReach,
	// and the rate is never above the one after the first bin; arrivals in one poll alone are no
	// rate.
	var p estimator
	p.add(at(100), 100*time.Millisecond, 10)
	if p.est.Enough || p.est.Arrivals != 10 {
		t.Errorf("10 arrivals in one poll: %+v, want no rate", p.est)
	}
	p.add(at(200), 100*time.Millisecond, 11)
	if !p.est.Enough || p.est.Arrivals != 11 || math.Abs(p.est.Rate-10*fewFactor[10]) > 1e-9 || !strings.Contains(p.est.Basis, "young") {
		t.Errorf("21 arrivals in 200ms: %+v, want %.1f/s, spread over %s", p.est, 10*fewFactor[10], AutoMinReach)
	}
	p.add(at(1100), 900*time.Millisecond, 10)
	// 21 after the first bin over 1 s: (21-1)/1 = 20/s.
	if !p.est.Enough || p.est.Arrivals != 21 || p.est.Window != time.Second || math.Abs(p.est.Rate-20) > 1e-9 {
		t.Errorf("31 arrivals in 1.1s, 21 of them after the first 100ms: %+v, want 20/s", p.est)
	}
	// Bins older than the window are forgotten, and not counted: one arrival alone is no rate.
	for i := range 100 {
		e.add(at(4210+(i+1)*1000), time.Second, 0)
	}
	e.add(at(105000), time.Second, 1)
	if e.est.Enough || e.est.Arrivals != 1 || len(e.bins) > 2*int(AutoWindow/time.Second)+2 {
		t.Errorf("after 100 s of silence: %+v with %d bins kept, want 1 arrival, no rate, bins trimmed", e.est, len(e.bins))
	}
}

// Fewer arrivals, longer silence, and no cliff: the silence needed grows as the arrivals over a
// second thin, is continuous where the recent rate's AutoMinArrivals begin, and passes a 15 s
// maximum only at about one arrival a second.
func TestEstimatorNoCliff(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	// n arrivals spread over span in 20 bins, after a first one; the last bin holds the last.
	needed := func(n int, span time.Duration) time.Duration {
		var e estimator
		e.add(t0, time.Second, 1)
		step := span / 20
		for i := range 20 {
			k := (n*(i+1))/20 - (n*i)/20
			if i == 19 && k == 0 {
				k = 1
			}
			e.add(t0.Add(step*time.Duration(i+1)), step, k)
		}
		return e.est.Needed
	}
	prev := time.Duration(0)
	for n := 40; n >= 2; n-- {
		got := needed(n, 2*time.Second)
		if prev > 0 && got < prev {
			t.Errorf("%d arrivals in 2 s need %s of silence, less than %d did (%s)", n, got, n+1, prev)
		}
		if prev > 0 && n >= 10 && float64(got) > 1.25*float64(prev) {
			t.Errorf("%d arrivals in 2 s need %s of silence, a jump from %s at %d", n, got, prev, n+1)
		}
		prev = got
	}
	if got := needed(10, 2*time.Second); got > 15*time.Second {
		t.Errorf("5 arrivals a second (10 in 2 s) need %s, past a 15 s maximum", got)
	}
	if got := needed(2, 2*time.Second); got < 15*time.Second {
		t.Errorf("one arrival a second (2 in 2 s) needs %s, within a 15 s maximum", got)
	}
}

func TestHistoryBins(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s := []counterSample{
		{at: t0, opens: 100, own: 5},
		{at: t0.Add(time.Second), opens: 130, own: 7},     // 30 opened, 2 of them drainit's: 28
		{at: t0.Add(2 * time.Second), opens: 131, own: 9}, // drainit accepted more than opened: 0
		{at: t0.Add(3 * time.Second), opens: 20, own: 9},  // the counter went backwards: skipped
		{at: t0.Add(3 * time.Second), opens: 25, own: 9},  // no time passed: skipped
		{at: t0.Add(4 * time.Second), opens: 40, own: 9},  // 15
	}
	got := historyBins(s[:len(s)-1], s[len(s)-1])
	want := []bin{{t0.Add(time.Second), time.Second, 28}, {t0.Add(2 * time.Second), time.Second, 0}, {t0.Add(4 * time.Second), time.Second, 15}}
	if len(got) != len(want) {
		t.Fatalf("bins %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("bin %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// Record samples at once and then every historyStartEvery for historyStartFor, every
// HistoryEvery after that; keeps AutoWindow of samples, and stops when a drain takes the history.
func TestRecord(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	ticks := make(chan time.Time)
	waits := make(chan time.Duration, 1)
	var n, reads uint64
	clock := t0
	read := func() (uint64, error) { reads++; n += 10; return n, nil }
	sampled := make(chan struct{}, 1)
	h := record(t.Context(), func() uint64 { sampled <- struct{}{}; return 1 }, read, nil, func() time.Time { return clock },
		func(d time.Duration) <-chan time.Time { waits <- d; return ticks })
	<-sampled // the first sample, at once
	for i := range 120 {
		d := <-waits
		want := HistoryEvery
		if clock.Sub(t0) < historyStartFor {
			want = historyStartEvery
		}
		if d != want {
			t.Fatalf("sample %d, %s after the start: the next asked for in %s, want %s", i+1, clock.Sub(t0), d, want)
		}
		clock = clock.Add(d)
		ticks <- clock
		<-sampled
	}
	samples, _ := h.take(clock)
	if keep := int(AutoWindow / HistoryEvery); len(samples) < keep || len(samples) > 4*keep {
		t.Errorf("%d samples kept of 121, want between %d and %d", len(samples), keep, 4*keep)
	}
	if last := samples[len(samples)-1]; !last.at.Equal(clock) || last.opens != 1210 || last.own != 1 {
		t.Errorf("last sample %+v", last)
	}
	// Taken: the goroutine has returned, so nothing receives a tick.
	select {
	case ticks <- clock:
		t.Error("the history still samples after a drain took it")
	default:
	}
}

// runEnv runs a watch on the given env and returns its result.
func runEnv(t *testing.T, cfg Config, e env) Result {
	t.Helper()
	select {
	case r, ok := <-start(t.Context(), cfg.withDefaults(), e):
		if !ok {
			t.Fatal("the channel closed without a result")
		}
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no result")
	}
	return Result{}
}

// costly is a sampler that charges the process's CPU: per poll, and once for the setup.
type costly struct {
	*fakeSystem
	cpu  *time.Duration
	poll time.Duration
}

func (c costly) sample() (int, error) { *c.cpu += c.poll; return c.fakeSystem.sample() }

// The 2% budget holds for the whole drain, the setup included (finding the listeners, the
// baseline: a few milliseconds), and for every poll's whole cost, not only its sample's: at no
// poll has drainit spent more than 2% of the time since the drain began, plus that poll.
func TestWatchCPUBudgetWholeProcess(t *testing.T) {
	f := newFakeSystem()
	f.arrivals = poisson(5, 1000, -AutoWindow, 300*time.Millisecond)
	var cpu time.Duration
	e := f.withCounter()
	const setup, poll = 4 * time.Millisecond, 300 * time.Microsecond
	e.open = func(Config) (sampler, Setup, error) {
		cpu += setup
		return struct {
			costly
			rawCounter
		}{costly{f, &cpu, poll}, counterSystem{f}}, Setup{}, nil
	}
	e.cpu = func() time.Duration { return cpu }
	e.measure = func(fn func()) time.Duration { c := cpu; fn(); return cpu - c } // all on one thread
	r := runEnv(t, Config{AppPID: 1, Auto: true, History: f.history()}, e)
	if r.Reason != ReasonQuiet || r.CPU != setup+time.Duration(len(f.polls))*poll {
		t.Fatalf("result %+v, CPU %s after %d polls", r, r.CPU, len(f.polls))
	}
	spent := setup + poll // and the baseline, the first poll
	for i, p := range f.polls[1:] {
		if budget := time.Duration(cpuBudget * float64(p.Sub(f.t0))); spent > budget {
			t.Errorf("poll %d at %s: %s spent before it, over 2%% (%s)", i+1, p.Sub(f.t0), spent, budget)
		}
		spent += poll
	}
	// The setup holds back the first polls (4 ms is 200 ms at 2%), not the end: the drain still
	// ends the silence needed after the last arrival, within two polls.
	last := f.arrivals[len(f.arrivals)-1]
	if after := r.Elapsed - last; after < r.Auto.Needed || after > r.Auto.Needed+2*AutoMaxInterval {
		t.Errorf("ended %s after the last arrival, want %s and at most two polls", after, r.Auto.Needed)
	}
}

// TestWatchCPUBudgetNotOthers: the process's CPU between two polls is charged to a poll only up
// to pollOverhead beyond its sample. The rest is other work's (reaping an orphan storm, a client
// holding hundreds of connections to the control server), and charged to the drain it spaced
// the polls out (0.6-3.9 s apart), so that sock-diag missed connections that opened and closed
// between two of them and the drain ended while clients still came.
func TestWatchCPUBudgetNotOthers(t *testing.T) {
	f := newFakeSystem()
	f.arrivals = every(700*time.Millisecond, 5*time.Second)
	const sample = 200 * time.Microsecond // sock-diag on a small table
	var own time.Duration                 // the drain's own: its samples
	e := f.env()
	e.measure = func(fn func()) time.Duration { fn(); own += sample; return sample }
	// Other work takes half a core all along.
	e.cpu = func() time.Duration { return own + f.now.Sub(f.t0)/2 }
	cfg := Config{AppPID: 1, Quiet: time.Second, Max: 15 * time.Second, Interval: 100 * time.Millisecond}
	r := runEnv(t, cfg, e)
	if r.Reason != ReasonQuiet {
		t.Fatalf("result %+v, want quiet", r)
	}
	most := max(cfg.Interval, time.Duration(float64(sample+pollOverhead)/cpuBudget))
	prev := f.polls[0]
	for i, p := range f.polls[1:] {
		if gap := p.Sub(prev); gap > most {
			t.Fatalf("poll %d came %s after the one before, under other work's load; want at most %s", i+1, gap, most)
		}
		prev = p
	}
	// It still ends a quiet period after the last arrival.
	if after := r.Elapsed - f.arrivals[len(f.arrivals)-1]; after < cfg.Quiet || after > cfg.Quiet+most {
		t.Errorf("ended %s after the last arrival, want %s and at most a poll", after, cfg.Quiet)
	}
}

// TestWatchSetupHoldsBackLittle: a costly setup (an app with 19,000 descriptors to look through:
// 124 ms) is budgeted only up to setupBudgeted, so the first poll comes at most 250 ms late:
// held back in full, it came 6.2 s after the drain began, and the drain ended that late.
func TestWatchSetupHoldsBackLittle(t *testing.T) {
	f := newFakeSystem()
	e := f.env()
	first := true
	e.measure = func(fn func()) time.Duration {
		fn()
		if first {
			first = false
			return 124 * time.Millisecond // the setup
		}
		return 20 * time.Microsecond
	}
	cfg := Config{AppPID: 1, Quiet: time.Second, Max: 15 * time.Second, Interval: 100 * time.Millisecond}
	r := runEnv(t, cfg, e)
	if len(f.polls) < 2 {
		t.Fatalf("result %+v after %d polls", r, len(f.polls))
	}
	if late := f.polls[1].Sub(f.t0); late > time.Duration(float64(setupBudgeted)/cpuBudget)+cfg.Interval {
		t.Errorf("the first poll came %s after the start, want at most %s", late, time.Duration(float64(setupBudgeted)/cpuBudget))
	}
	if r.Reason != ReasonQuiet || r.Elapsed > cfg.Quiet+time.Duration(float64(setupBudgeted)/cpuBudget) {
		t.Errorf("result %+v, want quiet within the quiet period and the setup's hold", r)
	}
}

// historySince is what Record would have sampled of f's arrivals, on its schedule, from the app's
// start (since, before t0) to the drain.
func (f *fakeSystem) historySince(since time.Duration) *History {
	h := &History{stop: func() {}}
	for at := since; at < 0; at += historyNext(at - since) {
		h.add(counterSample{at: f.t0.Add(at), opens: uint64(f.arrivedBy(f.t0.Add(at)))})
	}
	return h
}

// A burst that spans a history sample (a client's pool opening 25 connections in 0.3 s, across
// the drain's start) is the first traffic of a pod otherwise idle, and a trickle of 2/s goes on
// after it. The burst's part in the older bin cannot be placed within it, so it is not
// spread over that bin's second: the estimate rests on what came after, judged at a lower bound.
// It used to be 25 arrivals "over 1.2 s", 20/s, and the drain ended 0.9 s in while the trickle
// still came, in nearly every stop.
func TestAutoQuietBurstAcrossSample(t *testing.T) {
	early := 0
	const runs = 100
	for seed := range uint64(runs) {
		f := newFakeSystem()
		for i := range 25 {
			f.arrivals = append(f.arrivals, -150*time.Millisecond+time.Duration(i)*12*time.Millisecond)
		}
		f.arrivals = append(f.arrivals, poisson(seed, 2, 150*time.Millisecond, 5*time.Second)...)
		slices.Sort(f.arrivals)
		r := runEnv(t, Config{AppPID: 1, Auto: true, Max: 15 * time.Second, History: f.historySince(-10 * time.Second)}, f.withCounter())
		if r.Elapsed < f.arrivals[len(f.arrivals)-1] {
			early++
			t.Logf("seed %d: ended at %s, before the trickle's last arrival at %s (%s)", seed, r.Elapsed, f.arrivals[len(f.arrivals)-1], r.Auto)
		}
	}
	// What is left is the trickle's own chance of a silence as long as the one needed after the
	// burst (~1.5 s at 2/s: 5%), before its own arrivals lower the rate.
	if early > runs/10 {
		t.Errorf("%d of %d drains ended while the trickle still came, want %d at most", early, runs, runs/10)
	}
}

// Periodic bursts (a batch of 40 connections every 2 s, 20/s on average) end no drain inside
// their gap: the history shows the gap again and again, and a silence no longer than it proves
// nothing. It used to end after 0.92 s (the silence 20/s needs), inside the first gap.
func TestAutoQuietPeriodicBursts(t *testing.T) {
	for _, c := range []struct {
		batch  int
		period time.Duration
	}{{40, 2 * time.Second}, {100, 5 * time.Second}} {
		for seed := range uint64(10) {
			f := newFakeSystem()
			r0 := rand.New(rand.NewPCG(seed, 3))
			phase := time.Duration(r0.Int64N(int64(c.period)))
			for at := -AutoWindow + phase; at < 8*time.Second; at += c.period {
				for i := range c.batch {
					f.arrivals = append(f.arrivals, at+time.Duration(i)*time.Millisecond)
				}
			}
			r := runEnv(t, Config{AppPID: 1, Auto: true, Max: 20 * time.Second, History: f.history()}, f.withCounter())
			if last := f.arrivals[len(f.arrivals)-1]; r.Elapsed < last {
				t.Errorf("batches of %d every %s, seed %d: ended at %s, inside a gap, before the last batch at %s (%v)", c.batch, c.period, seed, r.Elapsed, last, r.Auto)
			}
		}
	}
}

// Without a history (a shared network namespace: a sidecar's listener beside the app's), a
// drain that sees its traffic for 0.2 s only (the proxies drop the pod) has a rate all the same:
// spread over a second and judged at a lower bound, it needs more silence the fewer the
// arrivals, not the maximum. It used to wait for the maximum below 20 arrivals ("too few").
func TestAutoQuietFewArrivalsNoCliff(t *testing.T) {
	for _, c := range []struct {
		rate   float64
		within time.Duration
	}{{75, 8 * time.Second}, {150, 2 * time.Second}} {
		for seed := range uint64(20) {
			f := newFakeSystem()
			f.arrivals = poisson(seed, c.rate, -AutoWindow, 200*time.Millisecond)
			r := f.run(t, Config{AppPID: 1, Auto: true, Max: 15 * time.Second, History: f.history()})
			last := lastBefore(f.arrivals, 200*time.Millisecond)
			if r.Reason != ReasonQuiet || r.Elapsed > c.within || r.Elapsed-last < r.Auto.Needed {
				t.Errorf("%.0f/s, seed %d: %s after %s, %v; want quiet within %s, no sooner than the silence needed after the last arrival at %s", c.rate, seed, r.Reason, r.Elapsed, r.Auto, c.within, last)
			}
		}
	}
}

// ownHistory is what Record would have counted at the app's own listeners, a sample a second
// (after the first two seconds' ten), from the app's start (since) to the drain, where the
// namespace is shared; and once more as the drain takes it, at t0.
func (f *fakeSystem) ownHistory(since time.Duration) *History {
	h := &History{stop: func() {}, own: ownHistory{endpoints: f.watched()}}
	prev := 0
	add := func(at time.Duration) {
		n := f.arrivedBy(f.t0.Add(at))
		h.own.samples = append(h.own.samples, ownSample{f.t0.Add(at), n - prev})
		prev = n
	}
	for at := since; at < 0; at += historyNext(at - since) {
		add(at)
	}
	add(0)
	h.own.samples[0].n = 0
	return h
}

// In a namespace shared with a sidecar's listener, the drain counts with sock-diag and cannot use
// the namespace's counter, but the History's counts at the app's own listeners give it the pod's
// rate: at 100/s with a 0.2 s propagation delay, the drain ends about 0.2 s after the last
// arrival, as in a namespace of its own, not seconds later on its own 20 arrivals.
func TestAutoQuietHistoryFromAppListeners(t *testing.T) {
	for seed := range uint64(10) {
		f := newFakeSystem()
		f.arrivals = poisson(seed, 100, -AutoWindow, 200*time.Millisecond)
		r := f.run(t, Config{AppPID: 1, Auto: true, Max: 15 * time.Second, History: f.ownHistory(-AutoWindow)})
		last := lastBefore(f.arrivals, 200*time.Millisecond)
		if r.Reason != ReasonQuiet || !r.HistoryUsed || r.HistoryFrom != HistoryAppListeners {
			t.Fatalf("seed %d: result %+v, want quiet from the app's listeners' history", seed, r)
		}
		if after := r.Elapsed - last; after < r.Auto.Needed || after > 400*time.Millisecond {
			t.Errorf("seed %d: ended %s after the last arrival (%v), want within 0.4 s, and the silence needed", seed, after, r.Auto)
		}
		// Counts of other endpoints than the drain's are not the app's: not used.
		f = newFakeSystem()
		f.arrivals = poisson(seed, 100, -AutoWindow, 200*time.Millisecond)
		h := f.ownHistory(-AutoWindow)
		h.own.endpoints = []config.Endpoint{{Port: 9090}}
		if r := f.run(t, Config{AppPID: 1, Auto: true, History: h}); r.HistoryUsed {
			t.Errorf("seed %d: a history of port 9090 used for a drain of %v", seed, f.watched())
		}
	}
}

// fakeAppCounter is an appCounter that says what it is told.
type fakeAppCounter struct {
	n      int
	eps    []config.Endpoint
	shared bool
	closed bool
}

func (c *fakeAppCounter) count() (int, []config.Endpoint, bool) { return c.n, c.eps, c.shared }
func (c *fakeAppCounter) close()                                { c.closed = true }

// The History keeps the app's listeners' counts while the namespace is shared and their
// endpoints stay the same, starts over when they change, drops them when the namespace is the
// app's alone, and counts once more when a drain takes it.
func TestHistoryOwnCounts(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &fakeAppCounter{n: 3, eps: []config.Endpoint{{Port: 8080}}, shared: true}
	h := &History{stop: func() {}, counter: c}
	for i := range 5 {
		h.countOwn(t0.Add(time.Duration(i) * time.Second))
	}
	if got := h.own.bins(); len(got) != 4 || got[3].n != 3 || got[3].span != time.Second {
		t.Fatalf("bins %+v, want 4 of 3 arrivals a second", got)
	}
	c.eps = []config.Endpoint{{Port: 8080}, {Port: 8443}}
	h.countOwn(t0.Add(5 * time.Second))
	if len(h.own.samples) != 1 || h.own.samples[0].n != 0 {
		t.Errorf("after a new listener: %+v, want a new baseline", h.own)
	}
	c.shared = false
	h.countOwn(t0.Add(6 * time.Second))
	if h.own.samples != nil {
		t.Errorf("the namespace the app's alone: %+v, want nothing kept", h.own)
	}
	c.shared = true
	h.countOwn(t0.Add(7 * time.Second))
	_, own := h.take(t0.Add(7500 * time.Millisecond))
	if len(own.samples) != 2 || !c.closed || h.counter != nil {
		t.Errorf("taken: %+v, closed %v, want the baseline and a last count at the take, the counter closed", own, c.closed)
	}
}
