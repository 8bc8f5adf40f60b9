package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestLogReaderGoneDrainitCarriesOn: drainit's stderr is a pipe whose reader goes away after
// the first line (a log collector restarted, `drainit … 2>&1 | tee` whose tee died). drainit must
// outlive its log: the stop sequence still runs (the app gets SIGTERM after the drain delay) and
// drainit exits with the app's status, where the Go runtime's default for a write to a broken
// stderr would end it with SIGPIPE (as PID 1: status 2) and leave the app unstopped.
func TestLogReaderGoneDrainitCarriesOn(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		t.Parallel()
		const drain = 300 * time.Millisecond
		d := start(t, spec{mode: m, logGone: true, app: app("signals"),
			args: []string{"--drain-delay", drain.String(), "--grace-period", "10s", "--log-format", "json"}})
		d.stderr.AwaitContains(t, waitTimeout, "app started") // and then nothing: the pipe is closed
		d.stdout.AwaitPrefix(t, waitTimeout, "ready app")
		sent := time.Now()
		d.signal(syscall.SIGTERM)
		got := d.stdout.AwaitContains(t, waitTimeout, "got app SIGTERM")
		if after := got.At.Sub(sent); after < drain-25*time.Millisecond {
			t.Errorf("the app got SIGTERM %s after drainit did, before the %s drain delay", after, drain)
		}
		if st := d.wait(waitTimeout); st != (exitStatus{code: 0}) {
			t.Errorf("drainit: %v, want exit 0 (the app's status) with its log's reader gone\n%s", st, d.dump())
		}
	})
}

// TestLogReaderStuckDrainitCarriesOn: drainit's stderr is a pipe that nobody reads, though its
// reader is still there (a log collector stalled on a full disk, `drainit … 2>&1 | sleep 1000`).
// An online hook's output fills the pipe, then the stop comes, and an offline hook's output is more
// than drainit keeps for the log: the stop sequence must go on as
// if the log were read (the app gets SIGTERM after the drain delay, drainit exits with its
// status, well within the grace period, its summary in the termination log), and once the log
// is read again what was queued comes out, with how many lines were dropped. Before, the
// supervisor's loop waited in its first log line of the stop: no stop signal, no SIGKILL, and no
// exit until the reader went away.
func TestLogReaderStuckDrainitCarriesOn(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		t.Parallel()
		const drain, grace = 300 * time.Millisecond, 10 * time.Second
		termLog := filepath.Join(t.TempDir(), "termination-log")
		if err := os.WriteFile(termLog, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		// Each hook's output is logged up to its budget, 128 KiB of events: the online hook's fills
		// the pipe (64 KiB) and some of drainit's queue, the offline hook's is more than the rest.
		const flood = `["/bin/sh","-c","yes drainit-log-filler | head -c 300000"]`
		d := start(t, spec{mode: m, logStuck: true, app: app("slow-stop", "500ms"),
			args: []string{"--drain-delay", drain.String(), "--grace-period", grace.String(), "--log-format", "json",
				"--termination-log", termLog, "--online-exec", flood, "--offline-exec", flood}})
		d.stdout.AwaitPrefix(t, waitTimeout, "ready app")
		// The pipe is full (64 KiB on Linux by default) once the hook has written that much.
		waitUntil(t, waitTimeout, "drainit's stderr pipe full", func() bool {
			n, err := unix.IoctlGetInt(int(d.errPipe.Fd()), unix.TIOCINQ) // FIONREAD
			return err == nil && n >= 60<<10
		})
		// The app takes 500 ms to stop: the log is read again before drainit exits.
		stopWithLogStuck(t, d, drain, grace)
		summary, err := os.ReadFile(termLog)
		if err != nil || !strings.HasSuffix(string(summary), "exit 0 +"+lastOffset(string(summary))) {
			t.Errorf("termination log %q (%v), want the summary ending in exit 0", summary, err)
		}
		var dropped, exiting bool
		for _, e := range d.logs() {
			dropped = dropped || e.msg() == "log lines dropped: the log's reader did not keep up"
			exiting = exiting || e.msg() == "drainit exiting"
		}
		if !dropped || !exiting {
			t.Errorf("once read again, the log has the dropped lines' notice %v and the summary %v, want both\n%s",
				dropped, exiting, d.stderr.Tail(5))
		}
	})
}

// lastOffset is the offset of a summary's last step ("exit 0 +812ms" gives "812ms").
func lastOffset(summary string) string {
	_, off, _ := strings.Cut(summary[strings.LastIndex(summary, ";")+1:], "+")
	return off
}

// TestLogSocketStuckDrainitCarriesOn: drainit's stderr is a stream socket nobody reads (a journal
// stream, podman --log-driver passthrough, whose reader stalled). The stop sequence must go on
// as with a full pipe: before, drainit wrote to a socket in blocking mode, the supervisor's loop
// waited in a log line, and the app got no stop signal and no SIGKILL until the log was read.
func TestLogSocketStuckDrainitCarriesOn(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		t.Parallel()
		const drain, grace = 300 * time.Millisecond, 10 * time.Second
		const flood = `["/bin/sh","-c","yes drainit-log-filler | head -c 100000"]`
		d := start(t, spec{mode: m, logStuck: true, logSocket: true, app: app("signals"),
			args: []string{"--drain-delay", drain.String(), "--grace-period", grace.String(), "--log-format", "json",
				"--online-exec", flood}})
		d.stdout.AwaitPrefix(t, waitTimeout, "ready app")
		// Full once what waits to be read is the send buffer's size: a send would block.
		buf, err := unix.GetsockoptInt(int(d.errSock.Fd()), unix.SOL_SOCKET, unix.SO_SNDBUF)
		if err != nil {
			t.Fatal(err)
		}
		waitUntil(t, waitTimeout, "drainit's stderr socket full", func() bool {
			n, err := unix.IoctlGetInt(int(d.errSock.Fd()), unix.SIOCOUTQ)
			return err == nil && n >= buf*3/4
		})
		d.errSock.Close() // drainit's end is drainit's alone again: its exit is the log's end
		stopWithLogStuck(t, d, drain, grace)
	})
}

// stopWithLogStuck stops d, whose log nobody reads, with SIGTERM: the app must get it after the
// drain delay as if the log were read; then the log is read again, and drainit must exit 0 (the
// app's status) well within the grace period.
func stopWithLogStuck(t *testing.T, d *drainitRun, drain, grace time.Duration) {
	t.Helper()
	sent := time.Now()
	d.signal(syscall.SIGTERM)
	got := d.stdout.AwaitContains(t, waitTimeout, "got app SIGTERM")
	if after := got.At.Sub(sent); after < drain-25*time.Millisecond || after > drain+5*time.Second {
		t.Errorf("the app got SIGTERM %s after drainit did, want the %s drain delay", after, drain)
	}
	d.readLog()
	if st := d.wait(waitTimeout); st != (exitStatus{code: 0}) {
		t.Errorf("drainit: %v, want exit 0 (the app's status) with its log stuck\n%s", st, d.dump())
	}
	if took := time.Since(sent); took > grace/2 {
		t.Errorf("drainit exited %s after the stop, want well within the %s grace period", took, grace)
	}
}

// TestLongLogLinesStayWhole: the app writes lines to the stderr drainit logs to (the runtime's
// pipe is both's), a reader that does not keep up keeps the pipe full, and an offline hook prints
// lines of 6000 bytes. Each line drainit writes must be one write of at most PIPE_BUF bytes,
// which a pipe never splits: every line read is the app's or one of drainit's, valid JSON.
// Before, a hook's line was logged as an event of 4234 bytes, written in two parts where the pipe
// had less room, and the app's lines landed between them (16-28 broken lines in 3 runs). The log
// does not depend on the mode: subreaper only.
func TestLongLogLinesStayWhole(t *testing.T) {
	t.Parallel()
	const appLine = "app line 0123456789 abcdefghijklmnopqrstuvwxyz"
	const hook = `["/bin/sh","-c","i=0; while [ $i -lt 20 ]; do printf '%06000d\\n' $i; i=$((i+1)); done"]`
	d := start(t, spec{mode: subreaper, logRate: 256 << 10,
		app:  []string{"/bin/sh", "-c", `trap 'exit 0' TERM; echo ready; while :; do echo '` + appLine + `' >&2; done`},
		args: []string{"--drain-delay", "0", "--grace-period", "20s", "--log-format", "json", "--offline-exec", hook}})
	d.stdout.AwaitPrefix(t, waitTimeout, "ready")
	d.signal(syscall.SIGTERM)
	if st := d.wait(waitTimeout); st != (exitStatus{code: 0}) {
		t.Fatalf("drainit: %v, want exit 0\n%s", st, d.dump())
	}
	var broken []string
	hookBytes := 0
	for _, l := range d.stderr.Texts() {
		if l == appLine {
			continue
		}
		var e logEntry
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			broken = append(broken, l)
			continue
		}
		if e.str("hook") == "offline-exec" && e.str("stream") == "stdout" {
			hookBytes += len(e.msg())
		}
	}
	if len(broken) > 0 {
		t.Errorf("%d lines neither the app's nor JSON, the first: %.300q", len(broken), broken[0])
	}
	if hookBytes < 6000 {
		t.Errorf("%d bytes of the hook's output logged, want at least one of its lines", hookBytes)
	}
}

// TestSlowLogReaderGetsTheStopSequence: drainit's stderr is read at 10 KiB/s (a log collector
// that does not keep up), the app writes to it too, and an offline hook floods its output. Every
// line of the stop sequence must come through, the summary last, and one line must say that the
// hook's lines were dropped, naming it; none of drainit's own may be. Before, the hook's lines
// filled drainit's queue, the stop sequence's lines after them were dropped or still queued when
// drainit's exit gave up waiting for the reader, after 1 s: 598 hook lines read, and neither
// `draining`, `stop signal sent`, `app exited`, `drainit exiting` nor a notice. The pipe is a
// page, not 64 KiB, so that at this rate the test takes seconds, not a minute; the log does not
// depend on the mode: subreaper only.
func TestSlowLogReaderGetsTheStopSequence(t *testing.T) {
	t.Parallel()
	const flood = `["/bin/sh","-c","yes drainit-hook-line | head -c 300000"]`
	d := start(t, spec{mode: subreaper, logRate: 10 << 10, logPipe: 4096,
		app:  []string{"/bin/sh", "-c", `trap 'exit 0' TERM; echo ready; while :; do echo 'app line 0123456789' >&2; sleep 0.05; done`},
		args: []string{"--drain-delay", "200ms", "--grace-period", "30s", "--log-format", "json", "--offline-exec", flood}})
	d.stdout.AwaitPrefix(t, waitTimeout, "ready")
	d.signal(syscall.SIGTERM)
	if st := d.wait(40 * time.Second); st != (exitStatus{code: 0}) {
		t.Fatalf("drainit: %v, want exit 0\n%s", st, d.dump())
	}
	seen := map[string]bool{}
	var notices []logEntry
	for _, e := range d.logs() {
		seen[e.msg()] = true
		if e.msg() == "log lines dropped: the log's reader did not keep up" {
			notices = append(notices, e)
		}
	}
	for _, want := range []string{"stop sequence started", "running offline hooks", "draining: the app keeps serving",
		"stop signal sent", "app exited", "drainit exiting"} {
		if !seen[want] {
			t.Errorf("the log's reader never got %q\n%s", want, d.stderr.Tail(10))
		}
	}
	if logs := d.logs(); len(logs) == 0 || logs[len(logs)-1].msg() != "drainit exiting" {
		t.Errorf("the summary is not the last of drainit's lines\n%s", d.stderr.Tail(5))
	}
	hookDropped := false
	for _, n := range notices {
		of, _ := n["of"].(map[string]any)
		if _, ok := of["offline-exec"]; ok {
			hookDropped = true
		}
		if _, ok := of["drainit"]; ok {
			t.Errorf("drainit's own lines were dropped: %v", n)
		}
	}
	if !hookDropped {
		t.Errorf("no notice that the hook's lines were dropped, naming it: %v\n%s", notices, d.stderr.Tail(10))
	}
}
