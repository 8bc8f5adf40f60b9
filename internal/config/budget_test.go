package config

import (
	"math"
	"testing"
	"time"
)

func TestBudget(t *testing.T) {
	const s = time.Second
	ms := func(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }
	defaults := BudgetOptions{Grace: 30 * s, KillMargin: 2 * s, DrainDelay: 5 * s, DrainMax: 15 * s,
		HookOverrun: 2 * s, LastHookOverrun: ms(300)}
	with := func(f func(*BudgetOptions)) BudgetOptions { o := defaults; f(&o); return o }
	for _, c := range []struct {
		name string
		o    BudgetOptions
		// shorten, when not zero, is Shortened's elapsed and left, applied to NewBudget(o).
		shorten [2]time.Duration
		// want: Deadline, KillAt, StopBy, HooksDeadline, LateHooksDeadline, PostStopDeadline, ExitBy, Drain,
		// OfflineRoom, PostStopRoom, MinGrace.
		want      [11]time.Duration
		drainFlag string
	}{
		{name: "defaults", o: defaults,
			want: [11]time.Duration{30 * s, 28 * s, 26 * s, 24 * s, 26 * s, ms(29500), ms(29900), 5 * s, 21 * s, ms(24500), 7 * s}, drainFlag: "drain-delay"},
		// 6s - 2s - 3s leaves the app 1s: the stop signal comes then, not 2s before the kill point.
		{name: "short grace", o: with(func(o *BudgetOptions) { o.Grace, o.DrainDelay = 6*s, 3*s }),
			want: [11]time.Duration{6 * s, 4 * s, 3 * s, 1 * s, 2 * s, ms(5500), ms(5900), 3 * s, 0, ms(2500), 5 * s}, drainFlag: "drain-delay"},
		{name: "kill margin larger than grace", o: with(func(o *BudgetOptions) { o.Grace, o.KillMargin = 2*s, 5*s }),
			want: [11]time.Duration{2 * s, -3 * s, -3 * s, -5 * s, -5 * s, ms(1500), ms(1900), 5 * s, -8 * s, ms(-3500), 10 * s}, drainFlag: "drain-delay"},
		// The adaptive drain's worst case is --drain-max: 27s leaves the app 1s before the kill
		// point, where --drain-delay's 5s would leave it 2s.
		{name: "adaptive", o: with(func(o *BudgetOptions) { o.Adaptive, o.DrainMax = true, 27*s }),
			want: [11]time.Duration{30 * s, 28 * s, 27 * s, 25 * s, 26 * s, ms(29500), ms(29900), 27 * s, 0, ms(2500), 29 * s}, drainFlag: "drain-max"},
		{name: "adaptive, default drain-max", o: with(func(o *BudgetOptions) { o.Adaptive = true }),
			want: [11]time.Duration{30 * s, 28 * s, 26 * s, 24 * s, 26 * s, ms(29500), ms(29900), 15 * s, 11 * s, ms(14500), 17 * s}, drainFlag: "drain-max"},
		// drainit check reads no hook deadline and gives no overrun: the deadlines are the
		// instants the hooks must be done by.
		{name: "no hook overrun", o: with(func(o *BudgetOptions) { o.HookOverrun, o.LastHookOverrun = 0, 0 }),
			want: [11]time.Duration{30 * s, 28 * s, 26 * s, 26 * s, 28 * s, ms(29800), ms(29900), 5 * s, 21 * s, ms(24800), 7 * s}, drainFlag: "drain-delay"},
		{name: "hook overrun past t0", o: with(func(o *BudgetOptions) { o.Grace, o.DrainDelay, o.KillMargin = 3*s, 0, 0 }),
			want: [11]time.Duration{3 * s, 3 * s, 1 * s, -1 * s, 1 * s, ms(2500), ms(2900), 0, 1 * s, ms(2500), 0}, drainFlag: "drain-delay"},
		{name: "zero", o: BudgetOptions{},
			want: [11]time.Duration{0, 0, 0, 0, 0, ms(-200), ms(-100), 0, 0, ms(-200), 0}, drainFlag: "drain-delay"},
		{name: "negative counts as 0", o: BudgetOptions{Grace: -s, KillMargin: -s, DrainDelay: -s, DrainMax: -s, Adaptive: true, HookOverrun: -s, LastHookOverrun: -s},
			want: [11]time.Duration{0, 0, 0, 0, 0, ms(-200), ms(-100), 0, 0, ms(-200), 0}, drainFlag: "drain-max"},
		// Sums past the largest Duration saturate rather than wrap round to a kill point after
		// the deadline.
		{name: "huge", o: BudgetOptions{Grace: 0, KillMargin: math.MaxInt64, DrainDelay: math.MaxInt64, HookOverrun: 2 * s},
			want: [11]time.Duration{0, -math.MaxInt64, -math.MaxInt64, math.MinInt64, math.MinInt64, ms(-200), ms(-100), math.MaxInt64, math.MinInt64, math.MinInt64, math.MaxInt64}, drainFlag: "drain-delay"},
		// The kubelet's signal at 3.02s, its preStop wait over, the SIGKILL 2s later: half of
		// what is left is the app's, the kill margin the rest.
		{name: "shortened", o: defaults, shorten: [2]time.Duration{ms(3020), 2 * s},
			want: [11]time.Duration{ms(5020), ms(4020), ms(4020), ms(2020), ms(2020), ms(4520), ms(4920), 5 * s, ms(-980), ms(-480), 6 * s}, drainFlag: "drain-delay"},
		// Near the deadline already: the deadline stays, the margin is half what is left.
		{name: "shortened near the deadline", o: defaults, shorten: [2]time.Duration{29 * s, 2 * s},
			want: [11]time.Duration{30 * s, ms(29500), ms(27500), ms(25500), ms(27500), ms(29500), ms(29900), 5 * s, ms(22500), ms(24500), ms(5500)}, drainFlag: "drain-delay"},
		{name: "shortened, past the largest Duration", o: defaults, shorten: [2]time.Duration{s, math.MaxInt64},
			want: [11]time.Duration{30 * s, 28 * s, 26 * s, 24 * s, 26 * s, ms(29500), ms(29900), 5 * s, 21 * s, ms(24500), 7 * s}, drainFlag: "drain-delay"},
	} {
		b := NewBudget(c.o)
		if c.shorten != [2]time.Duration{} {
			b = b.Shortened(c.shorten[0], c.shorten[1])
		}
		got := [11]time.Duration{b.Deadline, b.KillAt, b.StopBy, b.HooksDeadline, b.LateHooksDeadline, b.PostStopDeadline, b.ExitBy, b.Drain, b.OfflineRoom, b.PostStopRoom, b.MinGrace}
		if got != c.want || b.DrainFlag != c.drainFlag {
			t.Errorf("%s: got %v %s\nwant %v %s", c.name, got, b.DrainFlag, c.want, c.drainFlag)
		}
	}
}
