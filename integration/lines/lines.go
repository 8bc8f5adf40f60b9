// Package lines collects a process's output line by line as it arrives, each line with the time
// it arrived, and lets a test wait for a line with a deadline instead of sleeping. The integration
// tests, the kubelet scenarios and the rollout harness read drainit's and the apps' output
// through it.
//
// A Log is an io.Writer, for os/exec to copy a pipe into (Options.Stdout of a pod), or reads a
// stream itself (Read), which also tells when every writer has closed it (EOF). It does not
// import testing: the rollout harness, which is also a command, uses it too.
package lines

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Line is one line of output, without its newline.
type Line struct {
	At   time.Time // when it arrived (or, from ParseTimestamped, the time it was stamped with)
	Text string
}

// T is the part of testing.TB the waits use.
type T interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Log is the output of one stream so far. The zero value is not usable: call New or Read.
type Log struct {
	name string
	r    io.Closer // what Read reads, closed by Close; nil for a Log written to

	mu      sync.Mutex
	partial []byte // the end of the output, after its last newline
	lines   []Line
	eof     bool
	changed chan struct{} // closed, and replaced, whenever a line or EOF arrives
}

// New returns an empty Log to write the output to. name says which stream it is in failure
// messages ("stdout"). A Log written to never sees EOF: a wait on it lasts until its deadline.
func New(name string) *Log {
	return &Log{name: name, changed: make(chan struct{})}
}

// Read returns a Log that reads r until EOF or an error (a pty's master reports EIO once the
// terminal is closed everywhere), and then records the end.
func Read(name string, r io.ReadCloser) *Log {
	l := New(name)
	l.r = r
	go func() {
		_, _ = io.Copy(l, r)
		l.mu.Lock()
		defer l.mu.Unlock()
		if len(l.partial) > 0 { // a last line without its newline
			l.add(time.Now(), l.partial)
			l.partial = nil
		}
		l.eof = true
		l.notify()
	}()
	return l
}

// Write adds the complete lines in p, stamped with the time now; a line's end waits for the next
// Write. The "\r"s before the newline, which a terminal adds, are dropped.
func (l *Log) Write(p []byte) (int, error) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	added := false
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.add(now, l.partial[:i])
		l.partial = l.partial[i+1:]
		added = true
	}
	if added {
		l.notify()
	}
	return len(p), nil
}

// add records one line; l.mu is held.
func (l *Log) add(at time.Time, text []byte) {
	l.lines = append(l.lines, Line{At: at, Text: strings.TrimRight(string(text), "\r")})
}

// notify wakes the waits; l.mu is held.
func (l *Log) notify() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// Name is the stream's name, as given to New or Read.
func (l *Log) Name() string { return l.name }

// Close stops reading (unblocking Read's reader if the stream is still open). It does nothing
// to a Log written to.
func (l *Log) Close() error {
	if l.r == nil {
		return nil
	}
	return l.r.Close()
}

// Lines returns the lines so far.
func (l *Log) Lines() []Line {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Line(nil), l.lines...)
}

// Texts returns the lines so far, without their times.
func (l *Log) Texts() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return texts(l.lines)
}

func texts(lines []Line) []string {
	out := make([]string, len(lines))
	for i, ln := range lines {
		out[i] = ln.Text
	}
	return out
}

// String is the output so far, each line ended by a newline.
func (l *Log) String() string {
	var b strings.Builder
	for _, s := range l.Texts() {
		b.WriteString(s)
		b.WriteByte('\n')
	}
	return b.String()
}

// Count is how many lines so far match.
func (l *Log) Count(match func(string) bool) int {
	n := 0
	for _, s := range l.Texts() {
		if match(s) {
			n++
		}
	}
	return n
}

// Tail is the last n lines so far, for failure messages, with how many were left out.
func (l *Log) Tail(n int) string { return Tail(l.Texts(), n) }

// Tail formats the last n of lines, each ended by a newline, after a line saying how many came
// before them.
func Tail(lines []string, n int) string {
	var b strings.Builder
	if len(lines) > n {
		fmt.Fprintf(&b, "[... %d lines]\n", len(lines)-n)
		lines = lines[len(lines)-n:]
	}
	for _, s := range lines {
		b.WriteString(s)
		b.WriteByte('\n')
	}
	return b.String()
}

// failTail is how much of the output a failed wait shows.
const failTail = 60

// Await waits until ok accepts the lines so far, and returns them. It fails the test when the
// stream ends or timeout passes first; what says what was awaited.
func (l *Log) Await(t T, timeout time.Duration, what string, ok func(lines []string) bool) []string {
	t.Helper()
	return texts(l.await(t, timeout, what, func(lines []Line) bool { return ok(texts(lines)) }))
}

func (l *Log) await(t T, timeout time.Duration, what string, ok func(lines []Line) bool) []Line {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		l.mu.Lock()
		lines, eof, ch := append([]Line(nil), l.lines...), l.eof, l.changed
		l.mu.Unlock()
		if ok(lines) {
			return lines
		}
		if eof {
			t.Fatalf("%s ended before %s\n%s", l.name, what, Tail(texts(lines), failTail))
		}
		select {
		case <-ch:
		case <-timer.C:
			t.Fatalf("no %s within %s on %s\n%s", what, timeout, l.name, Tail(texts(lines), failTail))
		}
	}
}

// AwaitLine waits for a line match accepts and returns the first such line.
func (l *Log) AwaitLine(t T, timeout time.Duration, what string, match func(string) bool) Line {
	t.Helper()
	var found Line
	l.await(t, timeout, what, func(lines []Line) bool {
		for _, ln := range lines {
			if match(ln.Text) {
				found = ln
				return true
			}
		}
		return false
	})
	return found
}

// Containing matches a line containing sub.
func Containing(sub string) func(string) bool {
	return func(s string) bool { return strings.Contains(s, sub) }
}

// AwaitExact waits for the line want.
func (l *Log) AwaitExact(t T, timeout time.Duration, want string) Line {
	t.Helper()
	return l.AwaitLine(t, timeout, fmt.Sprintf("line %q", want), func(s string) bool { return s == want })
}

// AwaitContains waits for a line containing sub and returns the first one.
func (l *Log) AwaitContains(t T, timeout time.Duration, sub string) Line {
	t.Helper()
	return l.AwaitLine(t, timeout, fmt.Sprintf("line containing %q", sub), Containing(sub))
}

// AwaitPrefix waits for a line starting with prefix and returns the rest of it.
func (l *Log) AwaitPrefix(t T, timeout time.Duration, prefix string) string {
	t.Helper()
	ln := l.AwaitLine(t, timeout, fmt.Sprintf("line starting %q", prefix), func(s string) bool { return strings.HasPrefix(s, prefix) })
	return strings.TrimPrefix(ln.Text, prefix)
}

// AwaitPID waits for a line "PREFIX PID …" (the test app's "ready app 12") and returns the pid.
func (l *Log) AwaitPID(t T, timeout time.Duration, prefix string) int {
	t.Helper()
	rest := l.AwaitPrefix(t, timeout, prefix+" ")
	pid, err := strconv.Atoi(strings.Fields(rest + " x")[0])
	if err != nil {
		t.Fatalf("%s line %q has no pid", l.name, prefix+" "+rest)
	}
	return pid
}

// WaitEOF waits until every writer has closed the stream Read reads; false if timeout passed
// first (always, for a Log written to).
func (l *Log) WaitEOF(timeout time.Duration) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		l.mu.Lock()
		eof, ch := l.eof, l.changed
		l.mu.Unlock()
		if eof {
			return true
		}
		select {
		case <-ch:
		case <-timer.C:
			return false
		}
	}
}

// ParseTimestamped reads the output of `podman logs --timestamps` (and of `kubectl logs` and
// `crictl logs` with --timestamps): each line is an RFC 3339 time, a space and the text, the
// time being when the runtime read the line. Lines without the time are not the container's and
// are left out.
func ParseTimestamped(s string) []Line {
	var out []Line
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		ts, text, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			continue
		}
		out = append(out, Line{At: at, Text: text})
	}
	return out
}
