package rollout

import (
	"bytes"
	"strings"
	"testing"
)

func TestDrainStats(t *testing.T) {
	results := []Result{
		{Scenario: "drainit-adaptive", Name: "adaptive", Propagation: 1, Stop: 2.2, RoutedAfter: 25,
			Drain: &DrainLog{Reason: "quiet", NewConns: 25, Routed: 25, QuietAfterLast: 1.02}},
		{Scenario: "drainit-adaptive", Name: "adaptive", Propagation: 1, Stop: 2.1, RoutedAfter: 24,
			Drain: &DrainLog{Reason: "quiet", NewConns: 23, Routed: 24, QuietAfterLast: 1.01}},
		{Scenario: "drainit-adaptive", Name: "adaptive", Propagation: 1, Stop: 2.6,
			Drain: &DrainLog{Reason: "quiet", NewConns: 20, Routed: 20, QuietAfterLast: 1.05}},
		{Scenario: "drainit-fixed5", Name: "fixed 5s", Propagation: 1, Stop: 5.1},
		{Scenario: "drainit-fixed5", Name: "fixed 5s", Propagation: 1, Stop: 5.3, Failed: 2},
	}
	stats := DrainStats(results, ClaimsFor(Scenarios()))
	if len(stats) != 2 {
		t.Fatalf("%d stats, want 2: %+v", len(stats), stats)
	}
	a, f := stats[0], stats[1]
	if a.Runs != 3 || a.StopMin != 2.1 || a.StopMedian != 2.2 || a.StopMax != 2.6 || !a.ZeroFailures {
		t.Errorf("adaptive %+v", a)
	}
	if a.MaxStop != 2.5 || a.NewConnsSeen != 68 || a.Routed != 69 || a.QuietAfterLast == nil || *a.QuietAfterLast != 1.01 {
		t.Errorf("adaptive bound and watch %+v", a)
	}
	if f.Runs != 2 || f.StopMedian != 5.2 || f.ZeroFailures || f.MaxStop != 0 || f.QuietAfterLast != nil {
		t.Errorf("fixed %+v", f)
	}

	var buf bytes.Buffer
	if err := WriteDrainTable(&buf, stats); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"| adaptive | 1s | 3 | 0 | 2.20s | 2.10-2.60s | <= 2.50s FAIL | 68/69 | 1.01s |",
		"| fixed 5s | 1s | 2 | 2/0/0 | - (lost requests) | 5.10-5.30s | - | - | - |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
