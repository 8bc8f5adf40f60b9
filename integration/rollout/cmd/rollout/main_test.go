package main

import (
	"bytes"
	"context"
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
		Checks: []rollout.Check{{What: "adaptive drain stops within propagation + quiet + 0.5s", OK: false}},
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
		{[]string{"-report", path, "-drain-table"}, "| adaptive | 1s | 1 | 0 | 2.60s | 2.60-2.60s | <= 2.50s FAIL |"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), tt.args, &stdout, &stderr); code != 1 {
			t.Errorf("%q: exit %d, want 1 (a check failed); stderr %q", tt.args, code, stderr.String())
		}
		if !strings.Contains(stdout.String(), tt.want) || !strings.Contains(stdout.String(), "FAIL adaptive drain") {
			t.Errorf("%q: output lacks %q or the check:\n%s", tt.args, tt.want, stdout.String())
		}
	}
}
