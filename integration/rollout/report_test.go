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
	rows := Summarize(results, ExpectFor(Scenarios()))
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
