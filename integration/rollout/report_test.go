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
		"FAIL adaptive drain stops within propagation + quiet + 0.5s: 1 of 3 stops over (worst: drainit-adaptive at 1s, 2.60s of 2.50s)"} {
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
