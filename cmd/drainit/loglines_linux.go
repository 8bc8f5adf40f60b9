package main

import (
	"bytes"

	"github.com/rs/zerolog"

	"github.com/drainit/drainit/internal/jsonline"
	"github.com/drainit/drainit/internal/logqueue"
)

// pipeBuf is PIPE_BUF on Linux: a write of at most this many bytes to a pipe is written whole or
// not at all, never split by another process's writes to the same pipe.
const pipeBuf = 4096

// lineWriter is the log's last step before its queue: it makes each line, a zerolog event in
// JSON, the line drainit writes, in one write(2) of at most pipeBuf bytes. The app writes to the
// same stderr (the runtime's pipe); a longer write is split where the pipe is full, the app's
// writes land in between, and a collector reading lines gets two broken ones (seen: 16-28 invalid
// JSON lines in 3 runs, an exec hook's 6000-byte lines logged as 4234-byte events). A longer
// line is cut, and marked (jsonline.Cut), in JSON or, in console format, as the console writer
// renders it.
type lineWriter struct {
	console *zerolog.ConsoleWriter // nil: JSON lines
	q       *logqueue.Writer
}

// Write queues the line p renders to: see render.
func (l *lineWriter) Write(p []byte) (int, error) {
	if line := l.render(p); line != nil {
		_, _ = l.q.Write(line)
	}
	return len(p), nil
}

// render is the line drainit writes for p, a zerolog JSON event: p itself, or cut to pipeBuf, or
// as the console writer renders it, within pipeBuf. Nil when the console writer cannot read p.
func (l *lineWriter) render(p []byte) []byte {
	line := jsonline.Cut(p, pipeBuf)
	if l.console == nil {
		return line
	}
	// The console's line can be longer than its event (colours, a quoted field): cut the event
	// by what it was over, and render it again.
	for limit, tries := pipeBuf, 0; ; tries++ {
		var b bytes.Buffer
		c := *l.console
		c.Out = &b
		if _, err := c.Write(line); err != nil {
			return nil
		}
		if b.Len() <= pipeBuf {
			return b.Bytes()
		}
		if tries == 3 {
			return append(b.Bytes()[:pipeBuf-1], '\n') // not seen: a cut that did not converge
		}
		limit -= b.Len() - pipeBuf
		line = jsonline.Cut(p, limit)
	}
}
