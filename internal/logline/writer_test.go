package logline

import (
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// stuckReader is an output whose writes wait until it is released, as a pipe whose reader has
// stopped reading; it records each write.
type stuckReader struct {
	entered chan struct{} // a write has started waiting
	release chan struct{}
	mu      sync.Mutex
	writes  []string
}

func newStuck() *stuckReader {
	return &stuckReader{entered: make(chan struct{}, 100), release: make(chan struct{})}
}

func (s *stuckReader) Write(p []byte) (int, error) {
	s.entered <- struct{}{}
	<-s.release
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes = append(s.writes, string(p))
	return len(p), nil
}

func (s *stuckReader) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.writes...)
}

func notice(drops []Dropped) []byte {
	var b []byte
	for i, d := range drops {
		if i > 0 {
			b = append(b, "; "...)
		}
		b = fmt.Appendf(b, "dropped %d lines, %d bytes", d.Lines, d.Bytes)
		if d.Owner != "" {
			b = fmt.Appendf(b, " of %s", d.Owner)
		}
	}
	return append(b, '\n')
}

// A writer whose reader has stopped reading never makes a Write wait: lines past the queue's
// room are dropped and counted, and once the reader takes lines again they come in order, each
// in a write of its own, with the count where the gap is.
func TestWriteNeverWaitsForTheReader(t *testing.T) {
	out := newStuck()
	w := NewWriter(func() Output { return Output{Wait: out} }, 20, 20, notice)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, l := range []string{"one\n", "two\n", "three\n"} {
			_, _ = w.Write([]byte(l))
		}
		<-out.entered // "one" is being written, and waits for the reader
		for _, l := range []string{"four\n", "five\n", "six\n", "seven\n"} {
			_, _ = w.Write([]byte(l))
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Write waited for a reader that does not read")
	}
	if w.Flush(time.Now().Add(10 * time.Millisecond)) {
		t.Error("Flush reported every line written while the reader was stuck")
	}
	close(out.release)
	if !w.Flush(time.Now().Add(10 * time.Second)) {
		t.Fatal("Flush: lines still queued 10s after the reader took them again")
	}
	_, _ = w.Write([]byte("eight\n"))
	_, _ = w.Write([]byte("nine\n"))
	w.Flush(time.Now().Add(10 * time.Second))
	// "one" was out of the queue; "two" to "five" filled its 20 bytes; "six" and "seven" found
	// no room.
	want := []string{"one\n", "two\n", "three\n", "four\n", "five\n", "dropped 2 lines, 10 bytes\n", "eight\n", "nine\n"}
	if got := out.got(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("writes %q, want %q", got, want)
	}
}

// Lines dropped at the end, with no line after them to carry the notice, are told by Flush: the
// last lines of a run (its summary) are the ones a stuck reader loses.
func TestFlushTellsOfDroppedLines(t *testing.T) {
	out := newStuck()
	w := NewWriter(func() Output { return Output{Wait: out} }, 10, 10, notice)
	_, _ = w.Write([]byte("one\n"))
	<-out.entered
	_, _ = w.Write([]byte("two\n"))
	_, _ = w.Write([]byte("three and more\n"))
	close(out.release)
	if !w.Flush(time.Now().Add(10 * time.Second)) {
		t.Fatal("not flushed within 10s")
	}
	want := []string{"one\n", "two\n", "dropped 1 lines, 15 bytes\n"}
	if got := out.got(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("writes %q, want %q", got, want)
	}
}

// Flush returns at once when nothing is queued, and open is not called before the first line.
func TestFlushWithNothingQueued(t *testing.T) {
	w := NewWriter(func() Output { t.Error("opened with no line written"); return Output{} }, 10, 10, notice)
	if !w.Flush(time.Now()) {
		t.Error("Flush with nothing written reported lines left")
	}
}

// Write keeps a copy: the logger reuses its buffer for the next line at once.
func TestWriteCopies(t *testing.T) {
	out := newStuck()
	close(out.release)
	w := NewWriter(func() Output { return Output{Wait: out} }, 100, 100, notice)
	buf := []byte("first\n")
	_, _ = w.Write(buf)
	copy(buf, "XXXXX\n")
	if !w.Flush(time.Now().Add(10 * time.Second)) {
		t.Fatal("not flushed within 10s")
	}
	if got := out.got(); len(got) != 1 || got[0] != "first\n" {
		t.Errorf("wrote %q, want the line as it was written", got)
	}
}

// pipe is an output that takes lines at once while it has room, as a non-blocking pipe does, and
// whose Wait takes them once released.
type pipe struct {
	room int
	now  []string // taken at once
	*stuckReader
}

func (p *pipe) try(b []byte) (int, error) {
	if p.room == 0 {
		return 0, syscall.EAGAIN
	}
	n := min(len(b), p.room)
	p.room -= n
	p.now = append(p.now, string(b[:n]))
	return n, nil
}

// While the output takes lines at once, Write writes them itself and starts no goroutine; once
// it does not (the pipe is full), the rest of a line and every line after it are queued, so that
// the order holds, until the queue is empty again.
func TestWriteAtOnceWhileThereIsRoom(t *testing.T) {
	p := &pipe{room: 12, stuckReader: newStuck()}
	w := NewWriter(func() Output { return Output{Try: p.try, Wait: p.stuckReader} }, 100, 100, notice)
	_, _ = w.Write([]byte("one\n"))
	_, _ = w.Write([]byte("two\n"))
	if w.started {
		t.Error("the goroutine started while the output took every line at once")
	}
	_, _ = w.Write([]byte("three\n"))
	_, _ = w.Write([]byte("four\n"))
	if strings.Join(p.now, "|") != "one\n|two\n|thre" {
		t.Fatalf("written at once %q, want one, two and the start of three", p.now)
	}
	p.room = 100 // room again, but lines wait in the queue: they go first
	_, _ = w.Write([]byte("five\n"))
	close(p.release)
	if !w.Flush(time.Now().Add(10 * time.Second)) {
		t.Fatal("not flushed within 10s")
	}
	if got := p.got(); strings.Join(got, "|") != "e\n|four\n|five\n" {
		t.Errorf("written from the queue %q, want the rest of three, four, five", got)
	}
	_, _ = w.Write([]byte("six\n"))
	if last := p.now[len(p.now)-1]; last != "six\n" {
		t.Errorf("with the queue empty again, six was not written at once: %q", p.now)
	}
}

// A relayed line (a hook's output) is queued only while the queue holds less than relayedMax:
// behind a reader that has stopped reading, a hook's flood takes that much, and the Writer's own
// lines that come after it (the stop sequence's) are all kept, in order, up to max. The notice
// says how much was dropped, and whose.
func TestOwnLinesNotCrowdedOut(t *testing.T) {
	out := newStuck()
	w := NewWriter(func() Output { return Output{Wait: out} }, 100, 12, notice)
	_, _ = w.Write([]byte("start\n"))
	<-out.entered // "start" is being written, and waits for the reader
	for range 5 {
		w.WriteFor("h", []byte("hook\n"))
	}
	_, _ = w.Write([]byte("draining\n"))
	w.WriteFor("h", []byte("hook\n"))
	_, _ = w.Write([]byte("stop signal sent\n"))
	_, _ = w.Write([]byte("an own line too many\n"))
	w.WriteFor("h", []byte("hook\n"))
	close(out.release)
	if !w.Flush(time.Now().Add(10 * time.Second)) {
		t.Fatal("not flushed within 10s")
	}
	// Two hook lines fill its 12 bytes; the own lines, and the notices ahead of them, take the
	// rest of 100, but for the last one. The last notice, Flush's, names both owners, in the
	// order of their first drop.
	want := []string{"start\n", "hook\n", "hook\n", "dropped 3 lines, 15 bytes of h\n", "draining\n",
		"dropped 1 lines, 5 bytes of h\n", "stop signal sent\n", "dropped 1 lines, 21 bytes; dropped 1 lines, 5 bytes of h\n"}
	if got := out.got(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("writes %q, want %q", got, want)
	}
}
