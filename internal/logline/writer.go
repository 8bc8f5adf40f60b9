package logline

import (
	"errors"
	"io"
	"sync"
	"syscall"
	"time"
)

// Output is where a Writer's lines go.
type Output struct {
	// Try writes what it can of p without waiting for the reader and returns how much it wrote:
	// less than len(p), with a nil error or EAGAIN, leaves the rest to Wait. Another error loses
	// the line (a reader gone: EPIPE). Nil: every line goes through the queue.
	Try func(p []byte) (int, error)
	// Wait writes all of p, waiting for the reader as long as it takes.
	Wait io.Writer
}

// Writer is drainit's log between its loggers and its stderr: a writer that never makes its
// caller wait for the log's reader. A write to a full pipe waits for its reader, and a reader
// that stopped reading without going away made the supervisor's loop, and the stop sequence
// with it, wait in its next log line (docs/exit-and-logs.md, "When the container runs out").
// Here a line is written at once when the output takes it without waiting; otherwise it is
// queued, and one goroutine writes what is queued, in order, each line with its own write. A
// line that finds the queue full is dropped and counted, and the count, with whose lines they
// were, is logged where lines get through again. The lines relayed for others (an exec hook's
// output) take part of the queue only, so that they never crowd out the Writer's own. Only that
// goroutine ever waits for the reader, and, given an output the Go runtime polls, it waits in
// the poller holding no thread: a thread the runtime wants can be one it cannot create, at a
// container's process limit.
type Writer struct {
	open       func() Output          // the output, opened with the first line
	max        int                    // bytes queued at most
	relayedMax int                    // bytes queued at most for a relayed line to be queued
	notice     func([]Dropped) []byte // the line that tells of dropped lines

	mu      sync.Mutex
	out     Output
	opened  bool
	queue   [][]byte
	queued  int  // bytes in queue
	writing bool // the goroutine has a line out of the queue and not yet written
	started bool
	dropped []Dropped       // since the last notice, in the order of each owner's first drop
	kick    chan struct{}   // one slot: lines wait in the queue
	waiters []chan struct{} // Flush callers, closed once nothing is queued or being written
}

// Dropped is what was dropped of one owner's lines since the last notice.
type Dropped struct {
	Owner string // "" for the Writer's own lines (Write), else as given to WriteFor
	Lines int
	Bytes int
}

// NewWriter returns a Writer that queues up to max bytes, to the output open returns: open is called
// once, with the first line, so that a run that logs nothing opens nothing. A relayed line
// (WriteFor) is queued only while less than relayedMax bytes are: the rest is the Writer's own
// lines'. notice renders the line that says which lines were dropped, in the log's own format;
// it is queued ahead of the first line that gets through after them.
func NewWriter(open func() Output, max, relayedMax int, notice func([]Dropped) []byte) *Writer {
	return &Writer{open: open, max: max, relayedMax: relayedMax, notice: notice, kick: make(chan struct{}, 1)}
}

// Write writes p, one line of the Writer's own, or queues a copy of what the output did not take
// at once, and returns: len(p) and no error, also when p is dropped (a log line that cannot be
// written has no one to tell).
func (w *Writer) Write(p []byte) (int, error) {
	w.write("", p, w.max)
	return len(p), nil
}

// WriteFor writes p, a line the Writer relays for owner (non-empty: a hook's output), as Write
// does, except that a line that finds relayedMax bytes or more queued is dropped: the rest of the
// queue waits for the Writer's own lines, which no one else's crowd out.
func (w *Writer) WriteFor(owner string, p []byte) {
	w.write(owner, p, w.relayedMax)
}

// write writes p, owner's line, or queues it while the queue holds at most limit bytes with it.
func (w *Writer) write(owner string, p []byte, limit int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.opened {
		w.out, w.opened = w.open(), true
	}
	if len(w.queue) == 0 && !w.writing && len(w.dropped) == 0 && w.out.Try != nil {
		n, err := w.out.Try(p)
		if n >= len(p) || (err != nil && !errors.Is(err, syscall.EAGAIN)) {
			return
		}
		if n > 0 {
			// The rest of a line longer than what the output had room for (a socket's; a pipe
			// takes a line of at most PIPE_BUF bytes whole or not at all): it must go next, and
			// may be more than max.
			w.push(append([]byte(nil), p[n:]...))
			return
		}
	}
	if w.queued+len(p) > limit {
		w.drop(owner, len(p))
		return
	}
	w.pushNotice()
	w.push(append([]byte(nil), p...))
}

// drop counts a line of owner's, of size bytes, as dropped.
func (w *Writer) drop(owner string, size int) {
	for i := range w.dropped {
		if w.dropped[i].Owner == owner {
			w.dropped[i].Lines++
			w.dropped[i].Bytes += size
			return
		}
	}
	w.dropped = append(w.dropped, Dropped{Owner: owner, Lines: 1, Bytes: size})
}

// pushNotice queues the notice of the lines dropped since the last one, if any: over max by its
// own length at most, as it is what explains the gap.
func (w *Writer) pushNotice() {
	if len(w.dropped) > 0 {
		w.push(w.notice(w.dropped))
		w.dropped = nil
	}
}

// push queues a line and wakes the goroutine, starting it with the first line queued.
func (w *Writer) push(line []byte) {
	w.queue = append(w.queue, line)
	w.queued += len(line)
	if !w.started {
		w.started = true
		go w.run()
	}
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// run writes what is queued, a line per write: two lines in one write of more than PIPE_BUF
// bytes could be split by the app's own writes to the same pipe, where one line never is.
func (w *Writer) run() {
	for range w.kick {
		for {
			w.mu.Lock()
			if len(w.queue) == 0 {
				w.writing = false
				for _, c := range w.waiters {
					close(c)
				}
				w.waiters = nil
				w.mu.Unlock()
				break
			}
			line := w.queue[0]
			w.queue[0] = nil
			w.queue = w.queue[1:]
			w.queued -= len(line)
			w.writing = true
			w.mu.Unlock()
			_, _ = w.out.Wait.Write(line) // a reader gone loses the line (EPIPE), and only it
		}
	}
}

// Flush queues the notice of lines dropped since the last one, then waits until every line
// queued has been written, or until deadline, and reports whether they all were. Lines written
// meanwhile are waited for too.
func (w *Writer) Flush(deadline time.Time) bool {
	w.mu.Lock()
	w.pushNotice()
	if len(w.queue) == 0 && !w.writing {
		w.mu.Unlock()
		return true
	}
	done := make(chan struct{})
	w.waiters = append(w.waiters, done)
	w.mu.Unlock()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
