package hooks

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/rs/zerolog"
)

// outputLog is what logOutput wrote about one run's output.
type outputLog struct {
	logged      []string // the lines logged, both streams in the order logged
	limit       int      // warnings that the limit was reached
	lines, size int      // the final warning's count of what was not logged (0, 0: none)
}

func logOutputOf(t *testing.T, stdout, stderr io.Reader) outputLog {
	t.Helper()
	log, buf := newLog()
	logOutput(&log, "h", stdout, stderr, unpaced)
	var o outputLog
	for _, ev := range buf.events(t) {
		switch {
		case ev["stream"] != nil:
			o.logged = append(o.logged, ev["message"].(string))
		case ev["limit_bytes"] != nil:
			o.limit++
		case ev["message"] == "hook output not logged":
			o.lines, o.size = int(ev["lines"].(float64)), int(ev["bytes"].(float64))
		default:
			t.Errorf("unexpected event %v", ev)
		}
	}
	return o
}

// lines are the lines of text as logging them would cut them, for lines shorter than maxLine:
// without their end of line (\n or \r\n), the empty ones left out.
func lines(text string) []string {
	var ls []string
	for l := range strings.SplitSeq(text, "\n") {
		if l = strings.TrimSuffix(l, "\r"); l != "" {
			ls = append(ls, l)
		}
	}
	return ls
}

func cost(ls []string) (n int) {
	for _, l := range ls {
		n += len(l) + lineCost
	}
	return n
}

func size(ls []string) (n int) {
	for _, l := range ls {
		n += len(l)
	}
	return n
}

// checkAccount checks that every line of want was either logged or counted in the final warning,
// that what was logged fits the budget, and that the limit's warning came once if anything was
// left out.
func (o outputLog) checkAccount(t *testing.T, want []string) {
	t.Helper()
	if c := cost(o.logged); c > maxOutput {
		t.Errorf("%d lines logged, costing %d, over the budget of %d", len(o.logged), c, maxOutput)
	}
	if len(o.logged)+o.lines != len(want) || size(o.logged)+o.size != size(want) {
		t.Errorf("%d lines of %d bytes logged and %d of %d counted; want %d lines of %d bytes in all",
			len(o.logged), size(o.logged), o.lines, o.size, len(want), size(want))
	}
	if o.limit != min(o.lines, 1) {
		t.Errorf("%d warnings that the limit was reached, with %d lines not logged", o.limit, o.lines)
	}
}

// checkPrefix checks, for output on one stream, that the lines logged are the first of want, as
// many as fit the budget.
func (o outputLog) checkPrefix(t *testing.T, want []string) {
	t.Helper()
	n := len(o.logged)
	if n > len(want) || strings.Join(o.logged, "\n") != strings.Join(want[:n], "\n") {
		t.Fatalf("logged lines are not the first %d of the output", n)
	}
	if n < len(want) && cost(want[:n+1]) <= maxOutput {
		t.Errorf("%d lines logged; the next, of %d bytes, fitted too", n, len(want[n]))
	}
}

// Past the budget, each line is counted with its bytes, without its end of line.
func TestOutputCountPastBudget(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&b, "%-99s\n", fmt.Sprint("line ", i))
	}
	o := logOutputOf(t, strings.NewReader(b.String()), strings.NewReader(""))
	want := lines(b.String())
	o.checkPrefix(t, want)
	o.checkAccount(t, want)
	if logged := maxOutput / (99 + lineCost); len(o.logged) != logged || o.lines != 3000-logged || o.size != 99*(3000-logged) {
		t.Errorf("%d lines logged, %d of %d bytes counted; want %d logged, %d of %d bytes counted",
			len(o.logged), o.lines, o.size, logged, 3000-logged, 99*(3000-logged))
	}
}

// A \r before the newline is no more counted than logged, also when a read ends between the two,
// and a last line without a newline counts.
func TestOutputCountCRLF(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := range 5000 {
		b.WriteString(strings.Repeat("x", 1+i%97))
		if i%3 == 0 {
			b.WriteString("\r")
		}
		b.WriteString("\n")
	}
	b.WriteString("last, with no newline\r")
	want := lines(b.String())
	for _, r := range []io.Reader{strings.NewReader(b.String()), iotest.OneByteReader(strings.NewReader(b.String()))} {
		o := logOutputOf(t, r, strings.NewReader(""))
		o.checkPrefix(t, want)
		o.checkAccount(t, want)
		if o.lines == 0 {
			t.Error("nothing counted")
		}
	}
}

// The budget is one for both streams: whichever reads a line gets it logged while the budget
// lasts, and every line is logged or counted once.
func TestOutputCountBothStreams(t *testing.T) {
	t.Parallel()
	var out, errs strings.Builder
	for i := range 4000 {
		fmt.Fprintf(&out, "out %d\n", i)
		fmt.Fprintf(&errs, "err %d%s\r\n", i, strings.Repeat(".", i%200))
	}
	out.WriteString("out end")
	o := logOutputOf(t, strings.NewReader(out.String()), strings.NewReader(errs.String()))
	o.checkAccount(t, append(lines(out.String()), lines(errs.String())...))
}

// What is not logged past the budget: lines longer than maxLine, and empty lines.
func TestOutputCountOddLines(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	fit := maxOutput / (99 + lineCost)
	for i := range fit {
		fmt.Fprintf(&b, "%-99s\n", fmt.Sprint("line ", i))
	}
	long := strings.Repeat("y", 2*maxLine+100)
	b.WriteString(long + "\n") // the budget runs out in its first maxLine bytes
	b.WriteString("\n\r\nshort\n" + long + "\r\nend")
	o := logOutputOf(t, strings.NewReader(b.String()), strings.NewReader(""))
	if len(o.logged) != fit || o.limit != 1 {
		t.Fatalf("%d lines logged, %d limit warnings; want %d and 1", len(o.logged), o.limit, fit)
	}
	// Past the budget lines are counted as wc -l counts them (see lineCount): a long line once,
	// and the empty ones too.
	if wantLines, wantSize := 6, 2*len(long)+len("short")+len("end"); o.lines != wantLines || o.size != wantSize {
		t.Errorf("%d lines of %d bytes counted, want %d of %d", o.lines, o.size, wantLines, wantSize)
	}
}

// reads counts the reads of r.
type reads struct {
	r io.Reader
	n int
}

func (r *reads) Read(p []byte) (int, error) {
	r.n++
	return r.r.Read(p)
}

// Past the budget, output is read in bulk and counted with no work per line: read a line at a
// time, in reads of maxLine bytes, `yes` as a hook cost drainit ~20 ns a line.
func TestOutputPastBudgetReadInBulk(t *testing.T) {
	t.Parallel()
	data := strings.Repeat("y\n", 4<<20)
	r := &reads{r: strings.NewReader(data)}
	o := logOutputOf(t, r, strings.NewReader(""))
	if logged := maxOutput / (1 + lineCost); len(o.logged) != logged || o.lines != 4<<20-logged || o.size != o.lines {
		t.Errorf("%d lines logged, %d of %d bytes counted; want %d logged, the rest of 1 byte each counted",
			len(o.logged), o.lines, o.size, logged)
	}
	if most := len(data)/drainBuffer + 4; r.n > most {
		t.Errorf("%d MiB read in %d reads, want %d at most", len(data)>>20, r.n, most)
	}
}

// fakeClock is a pacer whose time moves only when the code under test sleeps, or when a read
// takes time (each of flood's reads takes perRead).
type fakeClock struct {
	t       time.Time
	slept   time.Duration
	sleeps  int
	perRead time.Duration
}

func (c *fakeClock) pacer() pacer {
	return pacer{func() time.Time { return c.t }, func(d time.Duration) { c.t = c.t.Add(d); c.slept += d; c.sleeps++ }}
}

// flood hands out full reads of "y\n" until n bytes have been read, each read taking the
// clock's perRead.
type flood struct {
	clock *fakeClock
	left  int
}

func (f *flood) Read(p []byte) (int, error) {
	if f.left == 0 {
		return 0, io.EOF
	}
	n := min(len(p), f.left)
	for i := range n {
		p[i] = "y\n"[i%2]
	}
	f.left -= n
	f.clock.t = f.clock.t.Add(f.clock.perRead)
	return n, nil
}

// TestOutputPastBudgetPaced: past the budget a hook's output is read at drainRate once
// drainBurst has been read, so that a flood costs drainit (and the app, still serving beside the
// offline hooks) bounded CPU: read as fast as it came, `yes` ran at 1-2.5 GB/s. A hook that
// writes slower than drainRate is never held back, nor one whose output fits the burst.
func TestOutputPastBudgetPaced(t *testing.T) {
	const total = 64 << 20
	for _, c := range []struct {
		name      string
		size      int
		perRead   time.Duration // how long the writer takes to fill a read
		wantSlept time.Duration
	}{
		{"flood", total, 0, time.Duration(float64(total-drainBurst) / drainRate * float64(time.Second))},
		{"within the burst", drainBurst, 0, 0},
		{"slower than the rate", total, 2 * time.Duration(float64(drainBuffer)/drainRate*float64(time.Second)), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := &fakeClock{t: time.Unix(0, 0), perRead: c.perRead}
			var n lineCount
			n.drain(&flood{clock: clock, left: c.size}, clock.pacer())
			if n.lines != c.size/2 || n.bytes != c.size/2 {
				t.Errorf("counted %d lines of %d bytes, want %d of 1 byte each", n.lines, n.bytes, c.size/2)
			}
			// Each sleep makes up for the last read: the last read's share may be left out.
			if slack := time.Duration(float64(drainBuffer) / drainRate * float64(time.Second)); clock.slept < c.wantSlept-slack || clock.slept > c.wantSlept {
				t.Errorf("slept %v in %d sleeps, want %v (less one read's share at most)", clock.slept, clock.sleeps, c.wantSlept)
			}
		})
	}
}

// unpaced is a pacer that never sleeps: the tests of what is counted, and the benchmark of what
// that costs, need not wait out drainRate.
var unpaced = pacer{time.Now, func(time.Duration) {}}

// BenchmarkCopyPastBudget reads 64 MiB of "y\n" (`yes`) through the hook's output path, unpaced:
// all but the first maxOutput's worth is read past the budget, to be counted and dropped.
func BenchmarkCopyPastBudget(b *testing.B) {
	data := bytes.Repeat([]byte("y\n"), 32<<20)
	log := zerolog.New(io.Discard)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		logOutput(&log, "yes", bytes.NewReader(data), strings.NewReader(""), unpaced)
	}
}

// The budget counts a line as the log writes it: NULs, other control characters and invalid
// UTF-8 take six bytes each in JSON (\u0000, \ufffd). Counted by its raw bytes, a hook printing
// binary put up to six times the budget in drainit's log.
func TestOutputBudgetCountsEscapes(t *testing.T) {
	t.Parallel()
	for name, line := range map[string]string{"NUL": strings.Repeat("\x00", 99), "invalid UTF-8": strings.Repeat("\xff", 99)} {
		var b strings.Builder
		for range 3000 {
			b.WriteString(line + "\n")
		}
		log, buf := newLog()
		logOutput(&log, "h", strings.NewReader(b.String()), strings.NewReader(""), unpaced)
		buf.mu.Lock()
		size := buf.b.Len()
		buf.mu.Unlock()
		if size > maxOutput*5/4 {
			t.Errorf("%s: %d bytes of log for a budget of %d", name, size, maxOutput)
		}
	}
}

// A line's cost covers what its event adds to it in drainit's log, with the fields the
// supervisor adds (logger, time, phase, elapsed) and the longest hook name; and a line of
// maxLine bytes of text, in its event, fits in one write of PIPE_BUF (4096) bytes, which the log
// does not cut.
func TestLineCostCoversItsEvent(t *testing.T) {
	t.Parallel()
	b := &logBuf{}
	// As cmd/drainit logs: a time with milliseconds, the elapsed in whole milliseconds.
	log := zerolog.New(b).With().Str("time", "2026-12-02T05:41:09.123Z").Str("logger", "drainit").
		Str("phase", "post-stop").Logger().
		Hook(zerolog.HookFunc(func(e *zerolog.Event, _ zerolog.Level, _ string) { e.Int64("elapsed", 36_000_000) }))
	logOutput(&log, "post-stop-http", strings.NewReader(strings.Repeat("y", maxLine)+"\nshort\n"), strings.NewReader(""), unpaced)
	b.mu.Lock()
	events := strings.SplitAfter(strings.TrimSuffix(b.b.String(), "\n"), "\n")
	b.mu.Unlock()
	if len(events) != 2 {
		t.Fatalf("%d events, want the 2 lines:\n%s", len(events), strings.Join(events, ""))
	}
	for i, line := range []string{strings.Repeat("y", maxLine), "short"} {
		if over := len(events[i]) - loggedSize([]byte(line)); over > lineCost {
			t.Errorf("the event of a line of %d bytes is %d bytes more, over the line's cost of %d:\n%s", len(line), over, lineCost, events[i])
		}
	}
	if len(events[0]) > 4096 {
		t.Errorf("the event of a line of maxLine bytes is %d bytes, more than PIPE_BUF", len(events[0]))
	}
}
