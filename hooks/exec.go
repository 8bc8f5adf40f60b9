package hooks

import (
	"bufio"
	"bytes"
	"io"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"
)

// NewExec is the exec hook named name that runs argv (config.ParseCommand). A command without a
// slash is looked up in PATH when the hook runs; the hook inherits drainit's environment and
// working directory.
//
// children starts the hook's process and learns its exit from the program's reaper (see the
// package doc). With nil children, Run fails at once and starts nothing.
func NewExec(name string, argv []string, children *Children) Hook {
	return &execHook{name: name, argv: argv, children: children}
}

// maxLine bounds one line of a hook's output: what is longer is logged in pieces of maxLine
// bytes. A piece of text, in its event (lineCost), fits in one line of drainit's log, which is
// one write of at most PIPE_BUF (4096) bytes; a longer event (escapes) is cut there, and marked.
const maxLine = 4096 - lineCost

// maxOutput bounds what one run of a hook writes to drainit's log, both streams together, each
// line counted with lineCost for the log event around it. The log is drainit's, and the stop
// sequence writes its own lines to it: a hook that floods its output (a loop, `set -x` in a big
// script, `yes`) behind a log reader that falls behind made the stop sequence wait its turn on
// the same pipe. Past the budget the output is still read, so that the hook never blocks on it,
// and counted, not logged, in bulk (lineCount) and paced (drainRate). docs/design.md ("A hook's
// output") has the measurements.
const maxOutput = 128 << 10

// lineCost is what a line costs the budget beyond its bytes: its log event's fields, as the
// supervisor logs them (logger, time, phase, elapsed, hook, stream: 164 bytes in JSON for a
// post-stop-http hook at +10 h; the console format writes less), with room to spare. At 128, a
// hook's budget put more than its 128 KiB in the log.
const lineCost = 192

// loggedSize is what line takes in drainit's log, as the larger of the JSON and the console
// formats writes it: a control character or an invalid UTF-8 byte as six bytes (JSON's \u0000 or
// \ufffd), a quote or a backslash as two. Counted by its raw bytes, a hook printing NULs or binary
// put six times the budget in the log.
func loggedSize(line []byte) int {
	n := 0
	for i := 0; i < len(line); {
		r, size := utf8.DecodeRune(line[i:])
		switch {
		case r == utf8.RuneError && size == 1, r < 0x20, r == 0x7f:
			n += 6
		case r == '"' || r == '\\':
			n += 2
		default:
			n += size
		}
		i += size
	}
	return n
}

// outputBudget is what is left of maxOutput for one run of a hook.
type outputBudget struct {
	mu     sync.Mutex
	left   int
	warned bool
}

// take says whether a line of n bytes is logged, and whether this is the first line that is
// not (for one warning at that moment).
func (b *outputBudget) take(n int) (log, first bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n+lineCost <= b.left {
		b.left -= n + lineCost
		return true, false
	}
	b.left = 0 // a long line over the rest does not let a shorter one after it through
	first = !b.warned
	b.warned = true
	return false, first
}

// StreamField is the field that marks a line of a hook's output in drainit's log: the stream it
// came from, "stdout" or "stderr"; the line's "hook" field names the hook. drainit's log keeps
// less room for these lines than for its own (cmd/drainit's lineWriter).
const StreamField = "stream"

// logOutput logs the lines of a hook run's stdout and stderr, tagged with the hook's name, until
// both end or fail, within maxOutput; then it warns of what it did not log. Each stream takes
// lines from the shared budget until it is refused one, and counts on its own from that line on.
func logOutput(log *zerolog.Logger, hook string, stdout, stderr io.Reader, clock pacer) {
	var wg sync.WaitGroup
	budget := &outputBudget{left: maxOutput}
	var dropped [2]lineCount
	for i, stream := range [2]string{"stdout", "stderr"} {
		r := [2]io.Reader{stdout, stderr}[i]
		wg.Go(func() {
			dropped[i] = copyLines(r, clock, func(line []byte) bool {
				ok, first := budget.take(loggedSize(line))
				if ok {
					log.Info().Str("hook", hook).Str(StreamField, stream).Msg(string(line))
				} else if first {
					log.Warn().Str("hook", hook).Int("limit_bytes", maxOutput).
						Msg("the hook's output is over drainit's limit: the rest is read and not logged")
				}
				return ok
			})
		})
	}
	wg.Wait()
	if n := dropped[0].lines + dropped[1].lines; n > 0 {
		size := dropped[0].bytes + dropped[1].bytes
		log.Warn().Str("hook", hook).Int("lines", n).Int("bytes", size).Msg("hook output not logged")
	}
}

// execHook runs a command; see Run in exec_linux.go.
type execHook struct {
	name     string
	argv     []string
	children *Children
}

func (h *execHook) Name() string { return h.name }

// copyLines calls emit with each line read from r, without its end of line, until r fails or
// ends, or emit refuses a line. A line longer than maxLine comes in pieces of maxLine bytes, so
// that a hook cannot make drainit hold an unbounded line. Empty lines are dropped: they carry
// nothing in a log. From the line emit refuses on, r is read to its end in bulk and counted, not
// split: copyLines returns that count.
func copyLines(r io.Reader, clock pacer, emit func(line []byte) bool) (dropped lineCount) {
	br := bufio.NewReaderSize(r, maxLine)
	for {
		raw, err := br.ReadSlice('\n')
		line := bytes.TrimSuffix(bytes.TrimSuffix(raw, []byte("\n")), []byte("\r"))
		if len(line) > 0 && !emit(line) {
			// The refused line is counted from its start, the rest of it with what follows: the
			// bufio buffer's lines first, which br.Read hands out before it reads r again.
			dropped.add(raw)
			if err == nil || err == bufio.ErrBufferFull {
				dropped.drain(br, clock)
			}
			dropped.end()
			return dropped
		}
		if err != nil && err != bufio.ErrBufferFull {
			return dropped
		}
	}
}

// drainBuffer is the size of the reads past the budget: the default pipe's capacity, so that a
// hook that keeps it full is read in as few calls as it can be.
const drainBuffer = 64 << 10

// drainRate and drainBurst pace the reads past the budget: after drainBurst bytes, a run's
// stream is read at drainRate bytes a second at most. The offline hooks run while the app still
// serves, and every byte a hook writes costs drainit a copy out of the pipe. A writer faster
// than drainRate waits on its pipe a little at a time, as any writer to a slower reader does:
// it is slowed, not blocked, and a hook's output worth keeping is far below this (its whole
// budget of log is 128 KiB).
const (
	drainRate  = 16 << 20
	drainBurst = 4 << 20
)

// pacer is the clock that paces the reads past the budget: realClock for a hook, a made-up one
// in tests.
type pacer struct {
	now   func() time.Time
	sleep func(time.Duration)
}

var realClock = pacer{time.Now, time.Sleep}

// lineCount counts output that is not logged a buffer at a time, with no work per line, which is
// what made a flood costly to read: a line is what ends in a newline, as wc -l counts, and a last
// one without; its bytes leave out the newline and a \r that ends the line. Logging cuts lines as
// much, except odd ones: it cuts a line longer than maxLine in pieces and drops an empty one. Here
// such a line counts once, an empty one counts, and a \r where logging would have cut a long line
// stays in its bytes.
type lineCount struct {
	lines, bytes int
	cr           bool // the last byte added was a \r
	open         bool // the last line added has no newline yet
}

// add counts p, which follows what was added before.
func (c *lineCount) add(p []byte) {
	if len(p) == 0 {
		return
	}
	nl := bytes.Count(p, []byte("\n"))
	c.lines += nl
	c.bytes += len(p) - nl - bytes.Count(p, []byte("\r\n"))
	if c.cr && p[0] == '\n' {
		c.bytes-- // a \r\n split between two reads
	}
	c.cr, c.open = p[len(p)-1] == '\r', p[len(p)-1] != '\n'
}

// drain reads r until it ends or fails, and counts what it read, at drainRate at most once
// drainBurst bytes have been read.
func (c *lineCount) drain(r io.Reader, clock pacer) {
	buf := make([]byte, drainBuffer)
	start, read := clock.now(), 0
	for {
		n, err := r.Read(buf)
		c.add(buf[:n])
		if err != nil {
			return
		}
		read += n
		if over := read - drainBurst; over > 0 {
			due := time.Duration(float64(over) / drainRate * float64(time.Second))
			if ahead := due - clock.now().Sub(start); ahead > 0 {
				clock.sleep(ahead)
			}
		}
	}
}

// end counts a last line without a newline.
func (c *lineCount) end() {
	if c.open {
		c.lines++
		if c.cr {
			c.bytes--
		}
		c.cr, c.open = false, false
	}
}
