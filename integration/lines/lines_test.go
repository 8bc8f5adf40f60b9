package lines

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeT records a failure and ends the goroutine, as testing.T's Fatalf does.
type fakeT struct{ failed string }

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls wait as a test would and returns the failure message, "" if it passed.
func run(wait func(t T)) string {
	f := &fakeT{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait(f)
	}()
	<-done
	return f.failed
}

func TestWriteSplitsLines(t *testing.T) {
	l := New("out")
	before := time.Now()
	fmt.Fprint(l, "one\r\ntw")
	if got := l.Texts(); !slices.Equal(got, []string{"one"}) {
		t.Fatalf("after a line and a half: %q, want the whole line alone", got)
	}
	fmt.Fprint(l, "o\nthree\n")
	if got := l.Texts(); !slices.Equal(got, []string{"one", "two", "three"}) {
		t.Fatalf("lines %q", got)
	}
	if at := l.Lines()[0].At; at.Before(before) || at.After(time.Now()) {
		t.Errorf("the first line is stamped %v, not when it was written", at)
	}
	if l.String() != "one\ntwo\nthree\n" || l.Count(func(s string) bool { return strings.HasPrefix(s, "t") }) != 2 {
		t.Errorf("String %q, Count of t… %d", l.String(), l.Count(func(s string) bool { return strings.HasPrefix(s, "t") }))
	}
	if got := l.Tail(2); got != "[... 1 lines]\ntwo\nthree\n" {
		t.Errorf("Tail(2) = %q", got)
	}
}

func TestAwaitSeesLaterLines(t *testing.T) {
	l := New("out")
	go func() {
		fmt.Fprintln(l, "noise")
		fmt.Fprintln(l, "ready app 42 127.0.0.2:80")
	}()
	if pid := l.AwaitPID(t, 10*time.Second, "ready app"); pid != 42 {
		t.Errorf("AwaitPID = %d, want 42", pid)
	}
	if ln := l.AwaitContains(t, time.Second, "app 42"); ln.Text != "ready app 42 127.0.0.2:80" || ln.At.IsZero() {
		t.Errorf("AwaitContains = %+v", ln)
	}
	if rest := l.AwaitPrefix(t, time.Second, "ready "); rest != "app 42 127.0.0.2:80" {
		t.Errorf("AwaitPrefix = %q", rest)
	}
}

func TestAwaitFailsAtTheDeadline(t *testing.T) {
	l := New("out")
	fmt.Fprintln(l, "something else")
	start := time.Now()
	msg := run(func(t T) { l.AwaitExact(t, 50*time.Millisecond, "never") })
	if !strings.Contains(msg, `no line "never" within 50ms on out`) || !strings.Contains(msg, "something else") {
		t.Errorf("failure %q: want what was awaited, the deadline, and the output", msg)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("failed after %v, before the deadline", d)
	}
}

func TestReadEndsAtEOF(t *testing.T) {
	r, w := io.Pipe()
	l := Read("stderr", r)
	fmt.Fprint(w, "first\nlast, no newline")
	l.AwaitExact(t, 10*time.Second, "first")
	if l.WaitEOF(10 * time.Millisecond) {
		t.Fatal("EOF while the writer is open")
	}
	w.Close()
	if !l.WaitEOF(10 * time.Second) {
		t.Fatal("no EOF after the writer closed")
	}
	if got := l.Texts(); !slices.Equal(got, []string{"first", "last, no newline"}) {
		t.Errorf("lines %q: the last line, without its newline, is kept at EOF", got)
	}
	msg := run(func(t T) { l.AwaitExact(t, time.Minute, "never") })
	if !strings.Contains(msg, `stderr ended before line "never"`) {
		t.Errorf("a wait on an ended stream: %q, want it to fail at once", msg)
	}
}

func TestCloseStopsReading(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	l := Read("stdout", r)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if !l.WaitEOF(10 * time.Second) {
		t.Fatal("reading went on after Close")
	}
	if err := New("x").Close(); err != nil {
		t.Errorf("Close of a written Log: %v", err)
	}
}

func TestParseTimestamped(t *testing.T) {
	got := ParseTimestamped("2026-11-22T10:00:00.123456789+01:00 ready app 7\nnot a log line\n2026-11-22T10:00:01Z  two spaces\n")
	want := []Line{
		{time.Date(2026, 11, 22, 9, 0, 0, 123456789, time.UTC), "ready app 7"},
		{time.Date(2026, 11, 22, 10, 0, 1, 0, time.UTC), " two spaces"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if !got[i].At.Equal(want[i].At) || got[i].Text != want[i].Text {
			t.Errorf("line %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
