package logline

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// TestCut: a line that fits is kept as it is; a longer one is cut to the limit, its longest
// strings first, at a character's boundary, and marked; the short fields are kept whole.
func TestCut(t *testing.T) {
	event := func(f func(e *zerolog.Event)) []byte {
		var b bytes.Buffer
		l := zerolog.New(&b).With().Str("logger", "drainit").Logger()
		f(l.Info())
		return b.Bytes()
	}
	long := strings.Repeat("é\"\x01y", 2000) // UTF-8, an escaped quote, a \u0001 escape
	for _, c := range []struct {
		name  string
		line  []byte
		limit int
		keep  []string // fields whose values must come out whole
	}{
		{"short", event(func(e *zerolog.Event) { e.Msg("app started") }), 4096, nil},
		{"message", event(func(e *zerolog.Event) {
			e.Str("hook", "offline-exec").Str("stream", "stdout").Msg(long)
		}), 4096, []string{"level", "logger", "hook", "stream"}},
		{"two long", event(func(e *zerolog.Event) { e.Str("error", long).Msg(long[:3000]) }), 4096, []string{"level"}},
		{"argv", event(func(e *zerolog.Event) {
			e.Strs("command", []string{"sh", "-c", long}).Msg("hook started")
		}), 1000, []string{"message", "level"}},
		{"many short", event(func(e *zerolog.Event) {
			e.Strs("survivors", strings.Split(strings.Repeat("1234 ", 2000), " ")).Str("phase", "cleanup").Msg("what survives SIGKILL")
		}), 4096, []string{"message", "level", "phase"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Cut(c.line, c.limit)
			var before, after map[string]any
			if err := json.Unmarshal(c.line, &before); err != nil {
				t.Fatalf("test line: %v", err)
			}
			if len(c.line) <= c.limit {
				if !bytes.Equal(got, c.line) {
					t.Errorf("a line that fits was changed: %q", got)
				}
				return
			}
			if len(got) > c.limit || !bytes.HasSuffix(got, []byte("}\n")) || bytes.Count(got, []byte("\n")) != 1 {
				t.Fatalf("cut to %d bytes (limit %d), want one line ending in }\\n: %q", len(got), c.limit, got)
			}
			if err := json.Unmarshal(got, &after); err != nil {
				t.Fatalf("cut line is not JSON (%v): %q", err, got)
			}
			if after["truncated"] != true {
				t.Errorf("cut line without \"truncated\":true: %q", got)
			}
			for _, k := range c.keep {
				if !equalJSON(before[k], after[k]) {
					t.Errorf("field %s = %v, want it whole: %v", k, after[k], before[k])
				}
			}
			if len(got) < c.limit-8 && c.name != "many short" {
				t.Errorf("cut to %d bytes, far under the limit %d", len(got), c.limit)
			}
		})
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// FuzzCut: whatever a log line's strings hold and whatever the limit, the cut line is one JSON
// object on one line, within the limit (for any limit a mark can fit in), marked where it was cut.
func FuzzCut(f *testing.F) {
	f.Add("hook output", "offline-exec", "x", 100)
	f.Add(strings.Repeat("\x00é\"\\", 300), "h", "\xff\xfe", 200)
	f.Fuzz(func(t *testing.T, msg, hook, arg string, limit int) {
		if limit < 0 || limit > 10000 {
			return
		}
		var b bytes.Buffer
		l := zerolog.New(&b)
		l.Info().Str("hook", hook).Strs("command", []string{arg, msg, arg}).Int("n", 12345).Msg(msg)
		line := b.Bytes()
		got := Cut(line, limit)
		if !json.Valid(got) || !bytes.HasSuffix(got, []byte("\n")) || bytes.Count(got, []byte("\n")) != 1 {
			t.Fatalf("Cut(%q, %d) = %q: not one JSON line", line, limit, got)
		}
		if len(line) <= limit {
			if !bytes.Equal(got, line) {
				t.Fatalf("Cut(%q, %d) changed a line that fits: %q", line, limit, got)
			}
			return
		}
		if limit >= 64 && len(got) > limit {
			t.Fatalf("Cut(%q, %d) = %d bytes", line, limit, len(got))
		}
		if !bytes.Contains(got, []byte(Mark)) {
			t.Fatalf("Cut(%q, %d) = %q: not marked", line, limit, got)
		}
	})
}
