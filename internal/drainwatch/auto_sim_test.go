package drainwatch

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drainit/drainit/integration/testenv"
)

// The automatic quiet period simulated over many seeds, as the rollout harness runs it: a pod
// whose app started a moment before its traffic did (warm-up before the deletion), the
// PassiveOpens history Record would have sampled since, proxies that drop the pod at their own
// delays after the deletion (t = 0), and the drain's polls. TestAutoQuietSimulate prints the
// distribution of the drain's end after the last proxy's delay, and how often it ended before
// the last arrival (a request lost in real life); DRAINWATCH_SIM=1 runs it (a minute or so).

// simPod is one simulated pod stop.
type simPod struct {
	warmup  time.Duration // traffic before the deletion
	proxies []proxy       // each proxy's rate at the pod and when it drops it (after t = 0)
	// rr: the proxies balance round-robin over rr pods (the harness's Balancer; IPVS), so the pod
	// gets every rr-th connection of a Poisson stream at rr times its rate; 0 or 1: Poisson at
	// the pod (iptables' random choice, the model's assumption).
	rr int
}

// simRun is one stop's outcome.
type simRun struct {
	end, last time.Duration // the drain's end and the last arrival, after the deletion
	est       Estimate
	reason    Reason
}

// arrivals draws the pod's arrivals: the readiness dial at the app's start, the harness's
// keep-alive clients (5 of them at the pod) at the load's start, and each proxy's stream.
func (p simPod) arrivals(seed uint64) (appStart time.Duration, out []time.Duration) {
	r := rand.New(rand.NewPCG(seed, 7))
	appStart = -p.warmup - time.Duration((0.02+0.3*r.Float64())*float64(time.Second))
	out = append(out, appStart+5*time.Millisecond)
	for range 5 {
		out = append(out, -p.warmup+time.Duration(r.IntN(5))*time.Millisecond)
	}
	rr := max(p.rr, 1)
	for i, px := range p.proxies {
		s := poisson(seed*31+uint64(i), px.rate*float64(rr), -p.warmup, px.until)
		// The pod's turn comes every rr-th connection, from a phase of its own.
		for j := int(r.IntN(rr)); j < len(s); j += rr {
			out = append(out, s[j])
		}
	}
	slices.Sort(out)
	return appStart, out
}

// simulate runs one drain on the pod's arrivals with cfg (Auto or a fixed Quiet).
func (p simPod) simulate(t *testing.T, seed uint64, cfg Config) simRun {
	appStart, arr := p.arrivals(seed)
	f := newFakeSystem()
	f.arrivals = arr
	if cfg.Auto {
		h := &History{stop: func() {}}
		for at := appStart; at < 0; at += historyNext(at - appStart) {
			h.add(counterSample{at: f.t0.Add(at), opens: uint64(f.arrivedBy(f.t0.Add(at)))})
		}
		cfg.History = h
	}
	cfg.AppPID = 1
	r := runEnv(t, cfg, f.withCounter())
	out := simRun{end: r.Elapsed, last: lastBefore(arr, 1<<62), reason: r.Reason}
	if r.Auto != nil {
		out.est = *r.Auto
	}
	return out
}

// quantiles of v (sorted in place): the median, p95, p99 and max.
func quantiles(v []time.Duration) string {
	slices.Sort(v)
	q := func(p float64) time.Duration { return v[min(len(v)-1, int(p*float64(len(v))))] }
	return fmt.Sprintf("%5.2f %5.2f %5.2f %5.2f", q(0.5).Seconds(), q(0.95).Seconds(), q(0.99).Seconds(), v[len(v)-1].Seconds())
}

func TestAutoQuietSimulate(t *testing.T) {
	testenv.SkipUnlessAsked(t, "DRAINWATCH_SIM", "runs the simulation (DRAINWATCH_SIM_SEEDS: how many seeds, 1000 unless told; DRAINWATCH_SIM_ONLY=one, steps, guard or 20: a part)")
	seeds := uint64(1000)
	if n, err := strconv.Atoi(os.Getenv("DRAINWATCH_SIM_SEEDS")); err == nil && n > 0 {
		seeds = uint64(n)
	}
	only := os.Getenv("DRAINWATCH_SIM_ONLY")
	skip := func(part string, rate float64) bool {
		return only != "" && only != part && (only != "20" || rate != 20)
	}
	var b strings.Builder
	// 1. One proxy: the drain's end after its delay D. The harness's stop is that plus ~0.1 s (the
	// app's own stop after the drain): its target of D + 1.2 s at 20/s is an end within ~1.1 s.
	fmt.Fprintf(&b, "one proxy, %d seeds: end - D (s): median p95 p99 max; how many over 1.07 s, ended before the last arrival, at the maximum; the silence needed: median p95 p99 max\n", seeds)
	for _, rr := range []int{1, 2} {
		for _, rate := range []float64{20, 200} {
			if skip("one", rate) {
				continue
			}
			for _, d := range []time.Duration{200 * time.Millisecond, time.Second, 3 * time.Second} {
				for _, w := range []time.Duration{1500 * time.Millisecond, 5 * time.Second, 30 * time.Second} {
					p := simPod{warmup: w, proxies: []proxy{{rate, d}}, rr: rr}
					var ends, fixed, needed []time.Duration
					over, early, maxed := 0, 0, 0
					for seed := range seeds {
						r := p.simulate(t, seed, Config{Auto: true})
						ends = append(ends, r.end-d)
						needed = append(needed, r.est.Needed)
						if r.end-d > 1070*time.Millisecond {
							over++
						}
						if r.end < r.last {
							early++
						}
						if r.reason == ReasonMax {
							maxed++
						}
						fixed = append(fixed, p.simulate(t, seed, Config{Quiet: time.Second}).end-d)
					}
					fmt.Fprintf(&b, "rr %d %4.0f/s D %-5s history %-5s auto: %s over %4d early %d max %d | needed %s | quiet 1s: %s\n",
						rr, rate, d, w, quantiles(ends), over, early, maxed, quantiles(needed), quantiles(fixed))
				}
			}
		}
	}
	// 2. Steps: how often the drain ends before the last arrival, with auto and with a fixed 1 s.
	fmt.Fprintf(&b, "\nsteps, %d seeds: drains ended before the last arrival (auto; quiet 1s), and auto's end - the last proxy's delay (s): median p95 p99 max\n", seeds)
	cases := []struct {
		name  string
		share []float64
		until []time.Duration
	}{
		{"staggered 0.3/1/2.5 s", []float64{1. / 3, 1. / 3, 1. / 3}, []time.Duration{300 * time.Millisecond, time.Second, 2500 * time.Millisecond}},
		{"step 2x at 1 s, end 2.5 s", []float64{1. / 2, 1. / 2}, []time.Duration{time.Second, 2500 * time.Millisecond}},
		{"step 3x at 1 s, end 2.5 s", []float64{2. / 3, 1. / 3}, []time.Duration{time.Second, 2500 * time.Millisecond}},
	}
	for _, c := range cases {
		for _, rate := range []float64{20, 200, 1000} {
			if skip("steps", rate) {
				continue
			}
			for _, w := range []time.Duration{1500 * time.Millisecond, 30 * time.Second} {
				var px []proxy
				for i := range c.share {
					px = append(px, proxy{rate * c.share[i], c.until[i]})
				}
				p := simPod{warmup: w, proxies: px}
				dLast := c.until[len(c.until)-1]
				var ends []time.Duration
				early, earlyFixed := 0, 0
				for seed := range seeds {
					r := p.simulate(t, seed, Config{Auto: true})
					ends = append(ends, r.end-dLast)
					if r.end < r.last {
						early++
					}
					if r := p.simulate(t, seed, Config{Quiet: time.Second}); r.end < r.last {
						earlyFixed++
					}
				}
				fmt.Fprintf(&b, "%-26s %5.0f/s history %-5s early %3d; %3d  end - D_last %s\n", c.name, rate, w, early, earlyFixed, quantiles(ends))
			}
		}
	}
	// 3. The step guard weighed: what a smaller one gains in time and costs in drains that end
	// while a proxy still routes. The harness's stop is the drain's end plus the app's own stop
	// (~0.14 s for its testapp: in-flight requests of 0.1 s and http.Server.Shutdown's polling),
	// so a stop within D_last + 0.3 s is an end within ~0.16 s of the last proxy's delay.
	fmt.Fprintf(&b, "\nthe step guard, %d seeds, history 1.5 s (the harness's warm-up): drains ended before the last arrival, and end - D_last (s): median p95 p99 max\n", seeds)
	for _, guard := range []float64{1, 1.5, 2} {
		for _, c := range []struct {
			name string
			px   func(rate float64) []proxy
		}{
			{"one proxy, D 1 s", func(r float64) []proxy { return []proxy{{r, time.Second}} }},
			{"staggered 0.3/1/2.5 s", func(r float64) []proxy {
				return []proxy{{r / 3, 300 * time.Millisecond}, {r / 3, time.Second}, {r / 3, 2500 * time.Millisecond}}
			}},
		} {
			for _, rate := range []float64{20, 200} {
				if skip("guard", rate) {
					continue
				}
				p := simPod{warmup: 1500 * time.Millisecond, proxies: c.px(rate)}
				dLast := p.proxies[len(p.proxies)-1].until
				var ends []time.Duration
				early := 0
				for seed := range seeds {
					r := p.simulate(t, seed, Config{Auto: true, stepGuard: guard})
					ends = append(ends, r.end-dLast)
					if r.end < r.last {
						early++
					}
				}
				fmt.Fprintf(&b, "guard %-4v %-22s %4.0f/s early %4d  end - D_last %s\n", guard, c.name, rate, early, quantiles(ends))
			}
		}
	}
	t.Log("\n" + b.String())
}
