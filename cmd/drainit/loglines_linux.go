package main

import (
	"bytes"
	"encoding/json"

	"github.com/rs/zerolog"

	"github.com/drainit/drainit/hooks"
	"github.com/drainit/drainit/internal/logline"
)

// pipeBuf is PIPE_BUF on Linux: a write of at most this many bytes to a pipe is written whole or
// not at all, never split by another process's writes to the same pipe.
const pipeBuf = 4096

// lineWriter is the log's last step before its queue: it makes each line, a zerolog event in
// JSON, the line drainit writes, in one write(2) of at most pipeBuf bytes, which the app's writes
// to the same stderr cannot split (docs/exit-and-logs.md, "The line cap"). A longer line is cut,
// and marked (logline.Cut), in JSON or, in console format, as the console writer renders it.
type lineWriter struct {
	console *zerolog.ConsoleWriter // nil: JSON lines
	q       *logline.Writer
}

// Write queues the line p renders to (render), as drainit's own or as the output of the hook
// that wrote it (relayedBy), which gets less of the queue.
func (l *lineWriter) Write(p []byte) (int, error) {
	line := l.render(p)
	if line == nil {
		return len(p), nil
	}
	if hook, ok := relayedBy(p); ok {
		l.q.WriteFor(hook, line)
	} else {
		_, _ = l.q.Write(line)
	}
	return len(p), nil
}

// streamKey and hookKey are the keys of a hook's output line (hooks.StreamField). In zerolog's
// JSON such text can only be a key: quotes inside a value are escaped.
var (
	streamKey = []byte(`"` + hooks.StreamField + `":`)
	hookKey   = []byte(`"hook":`)
)

// relayedBy says whether p, a zerolog JSON event, is a line of a hook's output, and names the
// hook. Everything else is drainit's own.
func relayedBy(p []byte) (hook string, ok bool) {
	i := bytes.Index(p, hookKey)
	if i < 0 || !bytes.Contains(p, streamKey) {
		return "", false
	}
	err := json.NewDecoder(bytes.NewReader(p[i+len(hookKey):])).Decode(&hook)
	return hook, err == nil && hook != ""
}

// notice is the line that says which lines were dropped: how many, how many bytes, and whose
// (drainit's own, or a hook's by its name), with the totals.
func (l *lineWriter) notice(drops []logline.Dropped) []byte {
	of := zerolog.Dict()
	lines, size := 0, 0
	for _, d := range drops {
		owner := d.Owner
		if owner == "" {
			owner = "drainit"
		}
		of.Dict(owner, zerolog.Dict().Int("lines", d.Lines).Int("bytes", d.Bytes))
		lines += d.Lines
		size += d.Bytes
	}
	var b bytes.Buffer
	log := zerolog.New(&b).With().Timestamp().Str("logger", "drainit").Logger()
	log.Warn().Int("lines", lines).Int("bytes", size).Dict("of", of).Msg("log lines dropped: the log's reader did not keep up")
	return l.render(b.Bytes())
}

// render is the line drainit writes for p, a zerolog JSON event: p itself, or cut to pipeBuf, or
// as the console writer renders it, within pipeBuf. Nil when the console writer cannot read p.
func (l *lineWriter) render(p []byte) []byte {
	line := logline.Cut(p, pipeBuf)
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
		line = logline.Cut(p, limit)
	}
}
