//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"

	"github.com/rs/zerolog"

	"github.com/drainit/drainit/internal/logline"
)

// On a terminal with no log level chosen, the lines of a run where nothing goes wrong are held
// back; warnings pass; from a stop sequence's first event on, every line passes.
func TestQuietWriter(t *testing.T) {
	var out bytes.Buffer
	log := zerolog.New(&quietWriter{out: &out})
	log.Info().Msg("app started")
	log.Debug().Msg("reaped orphan")
	log.Warn().Msg("the app never became ready")
	log.Info().Str("phase", "running").Int("status", 0).Msg("app exited")
	if got := out.String(); strings.Contains(got, "app started") || strings.Contains(got, "app exited") ||
		strings.Contains(got, "reaped orphan") || !strings.Contains(got, "never became ready") {
		t.Fatalf("before a stop sequence the terminal shows:\n%s", got)
	}
	out.Reset()
	log.Info().Str("phase", "running").Dur("elapsed", 0).Msg("stop sequence started")
	log.Info().Str("hook", "x").Msg("hook done") // no elapsed, but within the stop sequence
	log.Info().Str("summary", "…").Msg("drainit exiting")
	for _, want := range []string{"stop sequence started", "hook done", "drainit exiting"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("during the stop sequence the terminal does not show %q:\n%s", want, out.String())
		}
	}
	// A message that merely mentions the key opens nothing.
	out.Reset()
	log = zerolog.New(&quietWriter{out: &out})
	log.Info().Msg(`"elapsed": 3`)
	if out.Len() != 0 {
		t.Errorf("a message quoting \"elapsed\" opened the gate: %s", out.String())
	}
}

// On a terminal (console format), a message's control characters reach it escaped: an exec
// hook's output line can neither drive the terminal nor write over the line's time and level.
func TestConsoleEscapesMessages(t *testing.T) {
	text := consoleOutput(t, func(log zerolog.Logger) {
		log.Info().Str("hook", "offline-exec").Str("stream", "stdout").Msg("\x1b[2J\x1b]0;owned\x07ok\rFAKE INF app exited")
		log.Info().Str("hook", "offline-exec").Msg("plain words")
	})
	for _, want := range []string{`\x1b[2J\x1b]0;owned\aok\rFAKE INF app exited`, "plain words"} {
		if !strings.Contains(text, want) {
			t.Errorf("the terminal shows %q, without %q", text, want)
		}
	}
}

// On a terminal, a list field (the app's command, a hook's argv) holds no character a terminal
// acts on either: zerolog's console writer prints a list as encoding/json writes it, which leaves
// DEL, the C1 controls (U+009B: CSI) and a right-to-left override raw.
func TestConsoleEscapesLists(t *testing.T) {
	text := consoleOutput(t, func(log zerolog.Logger) {
		log.Info().Strs("command", []string{"/app", "del\x7f", "csi\u009b2J", "gnp.\u202eexe", "a\nb"}).Msg("app started")
	})
	if want := `command=["/app","del\u007f","csi\u009b2J","gnp.\u202eexe","a\nb"]`; !strings.Contains(text, want) {
		t.Errorf("the terminal shows %q, without %q", text, want)
	}
}

// Every line of the log is one write of at most PIPE_BUF bytes, in either format, so that the
// app's writes to the same pipe never split it: a longer one is cut, still a whole line (valid
// JSON), and says so.
func TestLogLinesFitPipeBuf(t *testing.T) {
	t.Setenv("NO_COLOR", "")                      // colours on: the console's line is longer than its event
	long := strings.Repeat("y\x01\u202e\"", 1500) // 6000 bytes, which escaping makes longer
	for _, format := range []string{"json", "console"} {
		t.Run(format, func(t *testing.T) {
			f, err := os.Create(filepath.Join(t.TempDir(), "log"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			log, q := newLogger(f, format, "info", false)
			log.Info().Str("hook", "offline-exec").Str("stream", "stdout").Msg(long)
			log.Info().Strs("command", []string{"sh", "-c", long}).Msg("app started")
			log.Warn().Str("error", long).Msg(long)
			log.Info().Msg("short")
			if !q.Flush(time.Now().Add(10 * time.Second)) {
				t.Fatal("the log's lines were not written to a file within 10s")
			}
			got, err := os.ReadFile(f.Name())
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.SplitAfter(string(got), "\n")
			if len(lines) != 5 || lines[4] != "" {
				t.Fatalf("wrote %d lines, want 4:\n%s", len(lines)-1, got)
			}
			for i, l := range lines[:3] {
				if len(l) > pipeBuf {
					t.Errorf("line %d: %d bytes, more than PIPE_BUF", i, len(l))
				}
				if format == "json" && (!json.Valid([]byte(l)) || !strings.Contains(l, `"truncated":true`)) {
					t.Errorf("line %d is not JSON marked as cut: %.200q", i, l)
				}
				if format == "console" && !strings.Contains(l, "truncated=") {
					t.Errorf("line %d is not marked as cut: %.200q", i, l)
				}
			}
			if strings.Contains(lines[3], "truncated") {
				t.Errorf("a short line was marked as cut: %q", lines[3])
			}
		})
	}
}

// drainit's exit waits for the log up to the stop sequence's exitBy however far off it is (a slow
// reader takes seconds to get to the summary), and 1 s where no stop sequence ran.
func TestFlushDeadline(t *testing.T) {
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	for _, c := range []struct{ exitBy, want time.Time }{
		{time.Time{}, now.Add(time.Second)},
		{now.Add(25 * time.Second), now.Add(25 * time.Second)},
		{now.Add(300 * time.Millisecond), now.Add(300 * time.Millisecond)},
		{now.Add(-time.Second), now.Add(-time.Second)},
	} {
		if got := flushDeadline(now, c.exitBy); !got.Equal(c.want) {
			t.Errorf("flushDeadline(now, %v) = now%+v, want now%+v", c.exitBy, got.Sub(now), c.want.Sub(now))
		}
	}
}

// The notice of dropped lines says how many, how many bytes, and whose: a hook's by its name,
// drainit's own as "drainit".
func TestDropNotice(t *testing.T) {
	lw := &lineWriter{}
	line := lw.notice([]logline.Dropped{{Owner: "offline-exec", Lines: 598, Bytes: 106342}, {Lines: 2, Bytes: 300}})
	var got struct {
		Level, Message string
		Lines, Bytes   int
		Of             map[string]struct{ Lines, Bytes int }
	}
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatalf("notice %q: %v", line, err)
	}
	if got.Level != "warn" || got.Lines != 600 || got.Bytes != 106642 || len(got.Of) != 2 ||
		got.Of["offline-exec"].Lines != 598 || got.Of["offline-exec"].Bytes != 106342 || got.Of["drainit"].Lines != 2 {
		t.Errorf("notice %s", line)
	}
}

// consoleOutput is what drainit's console log shows of the lines log writes, and fails the test
// where a character that is not graphic (but for the lines' ends) reaches the terminal.
func consoleOutput(t *testing.T, write func(log zerolog.Logger)) string {
	t.Helper()
	t.Setenv("NO_COLOR", "1") // the writer's own colours aside, no control byte may reach the file
	f, err := os.Create(filepath.Join(t.TempDir(), "console"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	log, q := newLogger(f, "console", "info", false)
	write(log)
	if !q.Flush(time.Now().Add(10 * time.Second)) {
		t.Fatal("the log's lines were not written to a file within 10s")
	}
	got, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.IndexFunc(got, func(r rune) bool { return r != '\n' && !unicode.IsGraphic(r) }); i >= 0 {
		t.Errorf("%U reached the terminal:\n%q", []rune(string(got[i:]))[0], got)
	}
	return string(got)
}

// The rarely sent signals (signals.Late: PWR, IO, the real-time ones...) are registered a while
// after the app has started (lateSignalsAfter) rather than while drainit starts, so that their
// registration does not compete with the app's start; they must still reach the app. The app
// traps PWR and waits for it; PWR is sent to drainit (this process) until the app has it, for
// at most 10 s: until drainit has registered PWR the Go runtime drops it.
func TestLateSignalReachesApp(t *testing.T) {
	defer signal.Reset()
	dir := t.TempDir()
	ready, got := filepath.Join(dir, "ready"), filepath.Join(dir, "got")
	app := `trap 'echo PWR > ` + got + `' PWR; echo > ` + ready + `; i=0
while [ ! -s ` + got + ` ] && [ $i -lt 400 ]; do sleep 0.025; i=$((i+1)); done
[ -s ` + got + ` ]`
	stderr, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	done := make(chan int, 1)
	go func() {
		done <- runCmd([]string{"--log-format", "json", "--forward", "child", "--", "/bin/sh", "-c", app}, os.Stdout, stderr)
	}()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case code := <-done:
			if code != 0 {
				out, _ := os.ReadFile(stderr.Name())
				t.Fatalf("the app never got PWR sent to drainit (exit %d)\n%s", code, out)
			}
			return
		case <-tick.C:
			if _, err := os.Stat(ready); err == nil {
				_ = syscall.Kill(os.Getpid(), syscall.SIGPWR)
			}
		}
	}
}

// A trigger that is not an early signal (PWR here: a UPS daemon's) is registered before the app
// starts, not with the late ones: the app sends it to drainit as the first thing it does, well
// before lateSignalsAfter, and it starts the stop sequence.
// Left to the late registration, the Go runtime would drop it, and the app would run its 5 s.
func TestTriggerRegisteredBeforeApp(t *testing.T) {
	defer signal.Reset()
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	start := time.Now()
	code := runCmd([]string{"--log-format", "json", "--triggers", "TERM,PWR", "--drain-delay", "0", "--",
		"/bin/sh", "-c", "kill -PWR $PPID; sleep 5"}, os.Stdout, stderr)
	out, _ := os.ReadFile(stderr.Name())
	if !strings.Contains(string(out), `"message":"stop sequence started`) {
		t.Fatalf("PWR sent by the app as it started did not start the stop sequence (exit %d after %s)\n%s",
			code, time.Since(start).Round(time.Millisecond), out)
	}
	// With no --stop-signal the app gets the trigger after the drain, and the shell ends by it,
	// well before its sleep would.
	if code != 128+int(syscall.SIGPWR) {
		t.Errorf("exit %d, want %d (the app ended by the SIGPWR drainit passed on)\n%s", code, 128+int(syscall.SIGPWR), out)
	}
}

// A first argument that is no subcommand is the app, so a misspelt subcommand is an app not
// found: the error names the subcommand it most likely meant. After --, the word is meant as an
// app, and no subcommand is offered.
func TestMisspeltSubcommand(t *testing.T) {
	defer signal.Reset()
	for _, tc := range []struct {
		args []string
		hint string
	}{
		{[]string{"chekc", "k8s/"}, "(drainit check?)"},
		{[]string{"versoin"}, "(drainit version?)"},
		{[]string{"--", "chekc"}, ""},
		{[]string{"drainit-no-such-app"}, ""},
	} {
		stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
		if err != nil {
			t.Fatal(err)
		}
		code := runCmd(tc.args, os.Stdout, stderr)
		stderr.Close()
		out, _ := os.ReadFile(stderr.Name())
		if code != 127 || !strings.Contains(string(out), `not found in PATH`) {
			t.Errorf("drainit %q: exit %d, want 127 and \"not found in PATH\"\n%s", tc.args, code, out)
		}
		if got := strings.Contains(string(out), "(drainit "); got != (tc.hint != "") || !strings.Contains(string(out), tc.hint) {
			t.Errorf("drainit %q: want the hint %q (none when empty)\n%s", tc.args, tc.hint, out)
		}
	}
}
