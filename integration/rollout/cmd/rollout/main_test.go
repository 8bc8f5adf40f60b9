package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
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
