package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drainit/drainit/integration/rollout"
)

func TestParseDurations(t *testing.T) {
	got, err := parseDurations("0.2s, 1,3s")
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{200 * time.Millisecond, time.Second, 3 * time.Second}
	if len(got) != len(want) {
		t.Fatalf("%v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%v, want %v", got, want)
		}
	}
	for _, bad := range []string{"", "1s,", "fast", "-1s"} {
		if _, err := parseDurations(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// Bad usage is exit status 2 with one line saying what is wrong, before anything runs.
func TestUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-drainit", "d", "-testapp", "t", "-scenarios", "bare-naive,nope"}, `unknown scenario "nope"`},
		{[]string{"-drainit", "d", "-testapp", "t", "-propagation", "soon"}, `-propagation: "soon"`},
		{[]string{"-drainit", "d", "-testapp", "t", "-repeat", "0"}, "at least 1"},
		{[]string{"-testapp", "t"}, "-drainit and -testapp are required"},
		{[]string{"-drainit", "d", "-testapp", "t", "extra"}, `unexpected argument "extra"`},
		{[]string{"-drainit", "d", "-testapp", "t", "-json", "-drain-table"}, "choose one"},
		{[]string{"-drainit", "d", "-testapp", "t", "-rates", "20,fast"}, `-rates: "fast"`},
		{[]string{"-drainit", "d", "-testapp", "t", "-rates", "0"}, `-rates: "0"`},
		{[]string{"-drainit", "d", "-testapp", "t", "-topologies", "mesh"}, `unknown proxy topology "mesh"`},
		{[]string{"-drainit", "d", "-testapp", "t", "-repeat-fixed", "-1"}, "at least 1"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), tt.args, &stdout, &stderr); code != 2 {
			t.Errorf("%q: exit %d, want 2 (stderr %q)", tt.args, code, stderr.String())
		}
		if !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%q: stderr %q lacks %q", tt.args, stderr.String(), tt.want)
		}
		if stdout.Len() != 0 {
			t.Errorf("%q: wrote %q to stdout", tt.args, stdout.String())
		}
	}
}

// -report prints a saved report without running anything (no root, no binaries), and its exit
// status is the checks' verdict.
func TestReport(t *testing.T) {
	report := rollout.Report{
		Rows:   []rollout.Row{{Scenario: "drainit-adaptive", Name: "adaptive", Propagation: 1, Runs: 1, Requests: 10, StopMin: 2.6, StopMax: 2.6, Expect: "none", MaxStop: 2.5, OverStop: 1}},
		Checks: []rollout.Check{{What: "adaptive drains stop within their bounds", OK: false}},
		Drains: []rollout.DrainStat{{Scenario: "drainit-adaptive", Name: "adaptive", Propagation: 1, Runs: 1, ZeroFailures: true, StopMin: 2.6, StopMedian: 2.6, StopMax: 2.6, MaxStop: 2.5}},
	}
	path := filepath.Join(t.TempDir(), "report.json")
	if err := writeJSONFile(path, report); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-report", path}, "none, stop<=2.5s FAIL"},
		{[]string{"-report", path, "-drain-table"}, "| adaptive | 1s | (0) | 1 | 0 | 2.60s | 2.60s | <= 2.50s FAIL |"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), tt.args, &stdout, &stderr); code != 1 {
			t.Errorf("%q: exit %d, want 1 (a check failed); stderr %q", tt.args, code, stderr.String())
		}
		if !strings.Contains(stdout.String(), tt.want) || !strings.Contains(stdout.String(), "FAIL adaptive drains") {
			t.Errorf("%q: output lacks %q or the check:\n%s", tt.args, tt.want, stdout.String())
		}
	}
}

// The cells: each propagation delay, then each topology, at each rate; without -rates, once at
// the load of -rate.
func TestParseCells(t *testing.T) {
	cells, err := parseCells("0.2s,1s", "staggered", "20,200")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cells {
		got = append(got, fmt.Sprintf("%s@%g", c, c.Rate))
	}
	want := "0.2s@20 1s@20 staggered (0.3s,1s,2.5s)@20 0.2s@200 1s@200 staggered (0.3s,1s,2.5s)@200"
	if strings.Join(got, " ") != want {
		t.Errorf("cells %q, want %q", strings.Join(got, " "), want)
	}
	if cells[2].Propagation != 2500*time.Millisecond {
		t.Errorf("a topology's cell has propagation %s, want its last proxy's 2.5s", cells[2].Propagation)
	}
	cells, err = parseCells("1s", "", "")
	if err != nil || len(cells) != 1 || cells[0] != (rollout.Cell{Propagation: time.Second}) {
		t.Errorf("no rates: %+v, %v", cells, err)
	}
}

// A check that failed only in runs too busy to time is printed noisy and does not fail the
// exit status; the machine's load is said. The verdicts are read anew from the report's runs
// (issue 16's `make demo` at load 30: one cut in the fixed 10 s drain at 1 s).
func TestReportNoisy(t *testing.T) {
	report := rollout.Report{
		Checks: []rollout.Check{{What: "a verdict of an older version", OK: false}},
		Results: []rollout.Result{{Scenario: "drainit-fixed10", Name: "fixed 10s", Propagation: 1, Stop: 10.2, Cut: 1,
			ByKind: map[rollout.Kind]int{}, Noisy: true, TimerLate: 0.35, Load1: 31.2}},
	}
	path := filepath.Join(t.TempDir(), "report.json")
	if err := writeJSONFile(path, report); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"-report", path}, &stdout, &stderr); code != 0 {
		t.Errorf("exit %d, want 0 for a noisy check; stderr %q", code, stderr.String())
	}
	for _, want := range []string{"noisy drain >= propagation, graceful app: 0 failed, 1 cut", "none noisy", "load average up to 31.2",
		"timers up to 350ms late; 1 of 1 runs too busy to time"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
}
