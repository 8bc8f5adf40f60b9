package main

import (
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	cases := []struct {
		in   []time.Duration
		p    float64
		want time.Duration
	}{
		{nil, 50, 0},
		{ms(7), 99, 7 * time.Millisecond},
		{ms(5, 1, 4, 2, 3), 50, 3 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 90, 9 * time.Millisecond},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10 * time.Millisecond},
		{ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
	}
	for _, c := range cases {
		if got := percentile(c.in, c.p); got != c.want {
			t.Errorf("percentile(%v, %v) = %v, want %v", c.in, c.p, got, c.want)
		}
	}
}

func TestCellRatioAndVerdict(t *testing.T) {
	tini := 0.8e-3
	if got := fmtCell(metricTime, 1.2e-3, tini, true); got != "1.20 ms (1.50×)" {
		t.Errorf("fmtCell = %q", got)
	}
	if got := fmtCell(metricBytes, 3*1024*1024, 0, false); got != "3.00 MiB" {
		t.Errorf("fmtCell bytes = %q", got)
	}
	tg := target{kind: targetRatio, limit: 1.1, ref: floorEarly}
	if v, ok := tg.verdict(2.2e-3, 2.0e-3, true); !ok || v != "pass (1.10×)" {
		t.Errorf("1.1× of the floor: 2.2 ms vs 2.0 ms = %q, %v; want pass (1.10×)", v, ok)
	}
	if v, _ := tg.verdict(2.3e-3, 2.0e-3, true); v != "**miss** (1.15×)" {
		t.Errorf("2.3 ms vs 2.0 ms under 1.1× = %q; want a miss at 1.15×", v)
	}
	if _, ok := tg.verdict(1.1e-3, 0, false); ok {
		t.Error("a ratio target without its reference's value must give no verdict")
	}
	abs := target{kind: targetAbs, limit: 1 * mib}
	if v, _ := abs.verdict(0.9*mib, 0, false); v != "pass" {
		t.Errorf("absolute target: %q; want pass", v)
	}
	if v, _ := abs.verdict(1.2*mib, 0, false); v != "**miss**" {
		t.Errorf("absolute target: %q; want a miss", v)
	}
}

// The README's table: each target is judged against its own reference (start-up against
// mininit -early, signals against mininit -forward, reaping against tini), and the Go floor
// column shows which mininit mode the row's floor is.
func TestMainTableJudgesAgainstTheGoFloor(t *testing.T) {
	col := func(name string, ref bool, vals map[string]float64) *column {
		return &column{name: name, ref: ref, vals: vals}
	}
	r := &results{orphans: 2000, cols: []*column{
		col("drainit", false, map[string]float64{"start50": 2.8e-3, "toapp50": 2.0e-3, "rssanon": 0.9 * mib, "sig50": 95e-6, "reap": 0.15, "size": 4 * mib}),
		col("tini", false, map[string]float64{"start50": 1e-3, "toapp50": 0.7e-3, "rssanon": 0.1 * mib, "sig50": 50e-6, "reap": 0.14, "size": 27 * 1024}),
		col(floorBare, true, map[string]float64{"size": 1.4 * mib}),
		col(floorEarly, true, map[string]float64{"start50": 2.6e-3, "toapp50": 1.5e-3}),
		col(floorForward, true, map[string]float64{"rssanon": 0.7 * mib, "sig50": 90e-6}),
	}}
	md := r.mainTable()
	lines := map[string]string{}
	for _, l := range strings.Split(md, "\n") {
		if f := strings.Split(l, " | "); len(f) > 1 {
			lines[strings.TrimPrefix(f[0], "| ")] = l
		}
	}
	want := map[string][]string{
		"start-up overhead p50":          {"| 2.60 ms (-early) |", "| ≤ 1.1× Go floor | pass (1.08×) |"},
		"launch to the app running p50":  {"| 1.50 ms (-early) |", "| **miss** (1.33×) |"},
		"idle RSS, anonymous (RssAnon)":  {"| 717 KiB (-forward) |", "| ≤ 1.0 MiB | pass |"},
		"SIGUSR1 forwarding latency p50": {"| 90 µs (-forward) |", "| pass (1.06×) |"},
		"reap 2000 orphans (median)":     {"| ≤ 1.1× tini | pass (1.07×) |"},
		"binary size":                    {"| 4.00 MiB (151.70×) | 1.40 MiB |", "| ≤ 6 MiB | pass |"},
	}
	for label, parts := range want {
		l, ok := lines[label]
		if !ok {
			t.Errorf("no row %q in\n%s", label, md)
			continue
		}
		for _, p := range parts {
			if !strings.Contains(l, p) {
				t.Errorf("row %q lacks %q:\n%s", label, p, l)
			}
		}
	}
	if !strings.HasPrefix(md, "| | drainit | Go floor | tini | target | drainit |") {
		t.Errorf("header: %q", strings.SplitN(md, "\n", 2)[0])
	}
}
