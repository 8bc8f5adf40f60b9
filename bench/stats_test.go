package main

import (
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
	tg := target{kind: targetRatio, limit: 1.25}
	if v, ok := tg.verdict(1.0e-3, tini, true); !ok || v != "pass" {
		t.Errorf("1.25× of tini: 1.0 ms vs 0.8 ms = %q, %v; want pass", v, ok)
	}
	if v, _ := tg.verdict(1.1e-3, tini, true); v != "**miss**" {
		t.Errorf("1.1 ms vs 0.8 ms under 1.25× = %q; want miss", v)
	}
	if _, ok := tg.verdict(1.1e-3, 0, false); ok {
		t.Error("a ratio target without tini must give no verdict")
	}
	abs := target{kind: targetAbs, limit: 1e-3}
	if v, _ := abs.verdict(0.9e-3, 0, false); v != "pass" {
		t.Errorf("absolute target: %q; want pass", v)
	}
}
