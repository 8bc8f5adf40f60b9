package rollout

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestSummarizeAndChecks(t *testing.T) {
	results := []Result{
		{Scenario: "bare-graceful", Name: "bare", Propagation: 1, Rep: 1, Requests: 100, Failed: 3,
			ByKind: map[Kind]int{Refused: 3}, Stop: 0.1,
			Failures: []FailureAt{{Kind: Refused, At: 0.2}, {Kind: Refused, At: 0.9}, {Kind: Refused, At: 0.5}}},
		{Scenario: "drainit-prestop", Name: "drainit", Propagation: 1, Rep: 1, Requests: 100, Stop: 1.6, ByKind: map[Kind]int{}},
		{Scenario: "drainit-prestop", Name: "drainit", Propagation: 1, Rep: 2, Requests: 90, Stop: 1.7, Cut: 1,
			ByKind: map[Kind]int{}, Killed: true},
	}
	rows := Summarize(results, ClaimsFor(Scenarios()))
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	bare, dr := rows[0], rows[1]
	if bare.Expect != "loss" || !bare.OK || *bare.FirstFailure != 0.2 || *bare.LastFailure != 0.9 {
		t.Fatalf("bare row %+v", bare)
	}
	if dr.Runs != 2 || dr.Requests != 190 || dr.Cut != 1 || dr.Killed != 1 || dr.StopMin != 1.6 || dr.StopMax != 1.7 {
		t.Fatalf("drainit row %+v", dr)
	}
	if dr.Expect != "none" || dr.OK {
		t.Fatalf("a cut and a SIGKILL passed the no-loss expectation: %+v", dr)
	}
	checks := Checks(rows)
	if len(checks) != 2 || !checks[0].OK || checks[1].OK {
		t.Fatalf("checks %+v", checks)
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, rows, checks); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"none FAIL", "loss ok", "+0.20s..+0.90s", "1.60-1.70s", "1/2", "FAIL drain >= propagation"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// Below 200 new connections a second, the automatic quiet period's claim is on the median stop
// (issue 40): a row whose median is over fails, with nothing lost and one stop far over; one
// whose median is within passes.
func TestMedianStopBound(t *testing.T) {
	var results []Result
	for i, stop := range []Seconds{1.2, 1.3, 3.0, 1.5, 1.6, 1.2} { // at 0.2 s: medians 1.3 and 1.5
		p := Seconds(0.2)
		if i >= 3 {
			p = 1
		}
		results = append(results, Result{Scenario: "drainit-auto", Name: "auto", Propagation: p, Rate: 20, Rep: i%3 + 1,
			Requests: 100, Stop: stop + p - 0.2, ByKind: map[Kind]int{}})
	}
	rows := Summarize(results, ClaimsFor(Scenarios()))
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	if r := rows[0]; r.MedianStop != 1.4 || r.MaxStop != 0 || r.OverMedian || !r.OK {
		t.Errorf("a median stop of 1.3s (one stop of 3s) failed the bound 1.4s: %+v", r)
	}
	if r := rows[1]; r.MedianStop != 2.2 || !r.OverMedian || r.OK {
		t.Errorf("a median stop of 2.3s passed the bound 2.2s: %+v", r)
	}
	var found bool
	for _, c := range Checks(rows) {
		if strings.HasPrefix(c.What, "the automatic quiet period's median stop") {
			found = true
			if c.OK || !strings.Contains(c.What, "1 of 2 cells over") {
				t.Errorf("check %+v, want 1 of 2 cells over", c)
			}
		}
	}
	if !found {
		t.Errorf("no check on the median stop: %+v", Checks(rows))
	}
}

// The adaptive drain's claim includes its stop duration: a run over the bound fails the row and
// the check even with nothing lost.
func TestStopBound(t *testing.T) {
	results := []Result{
		{Scenario: "drainit-adaptive", Name: "adaptive", Propagation: 1, Rep: 1, Requests: 100, Stop: 2.2, ByKind: map[Kind]int{}},
		{Scenario: "drainit-adaptive", Name: "adaptive", Propagation: 1, Rep: 2, Requests: 100, Stop: 2.6, ByKind: map[Kind]int{}},
		{Scenario: "drainit-adaptive", Name: "adaptive", Propagation: 3, Rep: 1, Requests: 100, Stop: 4.2, ByKind: map[Kind]int{}},
	}
	rows := Summarize(results, ClaimsFor(Scenarios()))
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	if r := rows[0]; r.Expect != "none" || r.MaxStop != 2.5 || r.OverStop != 1 || r.OK {
		t.Fatalf("a stop of 2.6s passed the bound 2.5s: %+v", r)
	}
	if r := rows[1]; r.MaxStop != 4.5 || r.OverStop != 0 || !r.OK {
		t.Fatalf("a stop of 4.2s failed the bound 4.5s: %+v", r)
	}
	checks := Checks(rows)
	if len(checks) != 2 || !checks[0].OK || checks[1].OK {
		t.Fatalf("checks %+v", checks)
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, rows, checks); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"none, stop<=2.5s FAIL", "none, stop<=4.5s ok",
		"FAIL adaptive drains stop within their bounds (quiet 1s: propagation + 1.5s; auto: last proxy's delay + 0.6s from 200 new connections/s): 1 of 3 stops over (worst: drainit-adaptive at 1s, 2.60s of 2.50s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestSecondsRoundTrip(t *testing.T) {
	if got := seconds(1500 * time.Millisecond).Duration(); got != 1500*time.Millisecond {
		t.Fatalf("%s", got)
	}
	if got := fmtSeconds(0.2); got != "0.2s" {
		t.Fatalf("%q", got)
	}
	if got := fmtSeconds(3); got != "3s" {
		t.Fatalf("%q", got)
	}
}

// A run the machine was too busy to time (issue 16's `make demo` at load 30) cannot fail a claim
// on what timing decides: a cut (the pod had the request CutAfter or more), a client's timeout,
// a stop over its bound. Those make the row and the check noisy, not failed; a refused request
// still fails them, unless an adaptive drain ended on a silence the harness made.
func TestNoisy(t *testing.T) {
	quiet := func(r Result) Result { r.ByKind = map[Kind]int{}; return r }
	claims := ClaimsFor(Scenarios())
	for _, tc := range []struct {
		name      string
		results   []Result
		ok, noisy bool
	}{
		{"a cut in a noisy run", []Result{quiet(Result{Scenario: "drainit-fixed10", Propagation: 1, Stop: 10.2, Cut: 1, Noisy: true})}, false, true},
		{"a cut in a quiet run", []Result{quiet(Result{Scenario: "drainit-fixed10", Propagation: 1, Stop: 10.2, Cut: 1})}, false, false},
		{"a stop over its bound in a noisy run", []Result{quiet(Result{Scenario: "drainit-adaptive", Propagation: 1, Stop: 2.56, Noisy: true})}, false, true},
		{"a stop over its bound in a quiet run", []Result{quiet(Result{Scenario: "drainit-adaptive", Propagation: 1, Stop: 2.56})}, false, false},
		{"timeouts in a noisy run", []Result{{Scenario: "drainit-fixed5", Propagation: 1, Stop: 5.1, Failed: 3,
			ByKind: map[Kind]int{Timeout: 3}, Noisy: true}}, false, true},
		{"a refused request in a noisy run", []Result{{Scenario: "drainit-fixed5", Propagation: 1, Stop: 5.1, Failed: 1,
			ByKind: map[Kind]int{Refused: 1}, Noisy: true}}, false, false},
		{"a drain ended on a silence the harness stalled through", []Result{{Scenario: "drainit-auto", Propagation: 2.5, Topology: "staggered",
			Stop: 2.3, Failed: 40, ByKind: map[Kind]int{Refused: 39, EOF: 1}, Noisy: true,
			Drain: &DrainLog{Reason: "quiet", Silence: 0.35, SilenceStalled: 0.23}}}, false, true},
		{"a drain ended on a silence of the traffic's", []Result{{Scenario: "drainit-auto", Propagation: 2.5, Topology: "staggered",
			Stop: 2.3, Failed: 40, ByKind: map[Kind]int{Refused: 40}, Noisy: true,
			Drain: &DrainLog{Reason: "quiet", Silence: 0.35, SilenceStalled: 0.05}}}, false, false},
		{"a SIGKILL in a noisy run", []Result{quiet(Result{Scenario: "drainit-fixed5", Propagation: 1, Stop: 5.1, Killed: true, Noisy: true})}, false, false},
		// The machine stopped for 10 s: the kubelet simulator's grace ran out, the clients failed
		// every way (out of local ports, as the generator caught up).
		{"a machine that froze", []Result{{Scenario: "drainit-fixed5", Propagation: 1, Stop: 38.5, Killed: true, Noisy: true, TimerLate: 9.9,
			Failed: 64633, ByKind: map[Kind]int{Other: 2143, Reset: 34, Timeout: 62456}}}, false, true},
	} {
		rows := Summarize(tc.results, claims)
		if len(rows) != 1 || rows[0].OK != tc.ok || rows[0].Noisy != tc.noisy {
			t.Errorf("%s: row %+v, want ok %v, noisy %v", tc.name, rows, tc.ok, tc.noisy)
			continue
		}
		var failed bool
		for _, c := range Checks(rows) {
			if !c.OK && !c.Noisy {
				failed = true
			}
			if c.Noisy && !strings.Contains(c.What, "too busy to time") {
				t.Errorf("%s: a noisy check does not say why: %q", tc.name, c.What)
			}
		}
		if failed == tc.noisy {
			t.Errorf("%s: checks %+v, want failed %v", tc.name, Checks(rows), !tc.noisy)
		}
		var buf bytes.Buffer
		if err := WriteChecks(&buf, Checks(rows)); err != nil {
			t.Fatal(err)
		}
		if tc.noisy && !strings.HasPrefix(buf.String(), "noisy ") && !strings.Contains(buf.String(), "\nnoisy ") {
			t.Errorf("%s: checks printed without a noisy verdict:\n%s", tc.name, buf.String())
		}
	}
}

func TestOverlap(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	spans := []span{{at(0), at(100)}, {at(50), at(150)}, {at(300), at(400)}, {at(500), at(510)}}
	for _, tc := range []struct {
		from, to int
		want     time.Duration
	}{
		{0, 1000, 260 * time.Millisecond}, // 0-150, 300-400, 500-510
		{120, 350, 80 * time.Millisecond}, // 120-150, 300-350
		{150, 300, 0},
	} {
		if got := overlap(spans, at(tc.from), at(tc.to)); got != tc.want {
			t.Errorf("overlap in [%d, %d]ms: %s, want %s", tc.from, tc.to, got, tc.want)
		}
	}
}
