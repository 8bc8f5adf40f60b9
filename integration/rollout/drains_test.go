package rollout

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestDrainStats(t *testing.T) {
	sec := func(v Seconds) *Seconds { return &v }
	frac := func(v float64) *float64 { return &v }
	needed := Seconds(0.1)
	results := []Result{
		{Scenario: "drainit-adaptive", Name: "adaptive", Propagation: 1, Stop: 2.2, RoutedAfter: 25, LastRouted: sec(0.99), DrainCPU: frac(0.007),
			Drain: &DrainLog{Reason: "quiet", NewConns: 25, Routed: 25, QuietAfterLast: 1.02, CPUShare: 0.004}},
		{Scenario: "drainit-adaptive", Name: "adaptive", Propagation: 1, Stop: 2.1, RoutedAfter: 24, LastRouted: sec(0.98), DrainCPU: frac(0.006),
			Drain: &DrainLog{Reason: "quiet", NewConns: 23, Routed: 24, QuietAfterLast: 1.01, CPUShare: 0.005}},
		{Scenario: "drainit-adaptive", Name: "adaptive", Propagation: 1, Stop: 2.6, LastRouted: sec(1),
			Drain: &DrainLog{Reason: "quiet", NewConns: 20, Routed: 20, QuietAfterLast: 1.05}},
		{Scenario: "drainit-fixed5", Name: "fixed 5s", Propagation: 1, Stop: 5.1},
		{Scenario: "drainit-fixed5", Name: "fixed 5s", Propagation: 1, Stop: 5.3, Failed: 2, ByKind: map[Kind]int{Refused: 2}},
		// The automatic quiet period at 200/s behind three proxies: the rate it saw, the silence
		// that needed, what it cost after the last connection, and the target it is held to.
		{Scenario: "drainit-auto", Name: "auto", Propagation: 2.5, Topology: "staggered", Rate: 200, PodRate: 190, Stop: 2.75, LastRouted: sec(2.49),
			Drain: &DrainLog{Reason: "quiet", Auto: true, Rate: 66, SilenceNeeded: &needed, NewConns: 300, Routed: 300}},
		{Scenario: "drainit-auto", Name: "auto", Propagation: 2.5, Topology: "staggered", Rate: 200, PodRate: 210, Stop: 2.85, LastRouted: sec(2.47),
			Drain: &DrainLog{Reason: "quiet", Auto: true, Rate: 70, SilenceNeeded: &needed, NewConns: 300, Routed: 300}},
		// Behind pooling L7 proxies the pod's rate is requests, and counting connections there
		// claims nothing.
		{Scenario: "l7-connections", Name: "L7 connections", Propagation: 3, Rate: 20, PodRate: 46, Stop: 1.14, LastRouted: sec(3),
			Failed: 100, ByKind: map[Kind]int{Refused: 100}, PoolDialsAfter: new(int)},
		{Scenario: "l7-requests", Name: "L7 requests", Propagation: 3, Rate: 20, PodRate: 47, Stop: 4.03, LastRouted: sec(3),
			PoolDialsAfter: new(int)},
	}
	stats := DrainStats(results, ClaimsFor(Scenarios()))
	if len(stats) != 5 {
		t.Fatalf("%d stats, want 5: %+v", len(stats), stats)
	}
	a, f, auto := stats[0], stats[1], stats[2]
	if a.Pooled || !stats[3].Pooled || stats[3].Outside == "" || stats[4].MaxStop != 4.5 {
		t.Errorf("L4 %+v, L7 %+v and %+v", a, stats[3], stats[4])
	}
	if a.Runs != 3 || a.StopMin != 2.1 || a.StopMedian != 2.2 || a.StopMax != 2.6 || !a.ZeroFailures {
		t.Errorf("adaptive %+v", a)
	}
	if a.MaxStop != 2.5 || a.NewConnsSeen != 68 || a.Routed != 69 || a.QuietAfterLast == nil || *a.QuietAfterLast != 1.01 {
		t.Errorf("adaptive bound and watch %+v", a)
	}
	if a.AfterLastMedian == nil || *a.AfterLastMedian != 1.21 || *a.AfterLastMax != 1.6 || a.DrainCPU == nil || *a.DrainCPU != 0.005 ||
		a.DrainCPUOutside == nil || *a.DrainCPUOutside != 0.007 {
		t.Errorf("adaptive stop after the last routed connection, CPU: %+v", a)
	}
	if f.Runs != 2 || f.StopMedian != 5.2 || f.ZeroFailures || f.MaxStop != 0 || f.QuietAfterLast != nil {
		t.Errorf("fixed %+v", f)
	}
	if auto.MaxStop != 3.1 || auto.StopMax != 2.85 || auto.AutoRate == nil || *auto.AutoRate != 68 || *auto.AutoNeeded != 0.1 || auto.PodRate != 200 {
		t.Errorf("auto %+v", auto)
	}

	var buf bytes.Buffer
	if err := WriteDrainTable(&buf, stats); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"| adaptive | 1s | (0) | 3 | 0 | 2.20s | 2.60s | <= 2.50s FAIL | 1.21s / 1.60s | - | 0.50% |",
		"| fixed 5s | 1s | (0) | 2 | 2/0/0 | - (lost requests) | 5.30s | - | - | - | - |",
		"| auto | staggered (0.3s,1s,2.5s) | 200 (200) | 2 | 0 | 2.80s | 2.85s | <= 3.10s ok | 0.32s / 0.38s | 68/s, 0.10s | - |",
		"| L7 connections | 3s | 20 (46 requests/s) | 1 | 100/0/0 | - (lost requests) | 1.14s | none: a pooling L7 proxy",
		"| L7 requests | 3s | 20 (47 requests/s) | 1 | 0 | 4.03s | 4.03s | <= 4.50s ok | 1.03s / 1.03s | - | - |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// Median is the middle value, the mean of the two middle ones for an even count, whatever the
// order given, and leaves its argument as it was: the drain tables of both harnesses rest on it.
func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		v    []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{2, 2, 9, 1}, 2},
	} {
		in := slices.Clone(tc.v)
		if got := Median(tc.v); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", in, got, tc.want)
		}
		if !slices.Equal(in, tc.v) {
			t.Errorf("Median changed its argument from %v to %v", in, tc.v)
		}
	}
}
