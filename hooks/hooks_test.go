package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// TestMain lets the test binary double as the helper program exec hooks run (see helper in
// helper_test.go): `<test binary> hooks-helper MODE ARGS…`.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "hooks-helper" {
		os.Exit(helper(os.Args[2:]))
	}
	os.Exit(m.Run())
}

var (
	reaperOnce   sync.Once
	testChildren Children
)

// children starts, once per test binary, a reaper that does what drainit's supervisor does:
// wait4(-1, WNOHANG) on each SIGCHLD, every status handed to Children.Exited. It is started
// only by the tests that run exec hooks: a fuzzing coordinator waits for its own workers.
func children() *Children {
	reaperOnce.Do(func() {
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, unix.SIGCHLD)
		go func() {
			for {
				for {
					var ws unix.WaitStatus
					pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
					if err == unix.EINTR {
						continue
					}
					if err != nil || pid <= 0 {
						break
					}
					testChildren.Exited(pid, ws)
				}
				<-sigs
			}
		}()
	})
	return &testChildren
}

// logBuf collects a logger's JSON lines; zerolog writes from several goroutines.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// events decodes every line logged so far.
func (l *logBuf) events(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var evs []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(l.b.String()), "\n") {
		if line == "" {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// find returns the first event whose fields include all of want.
func (l *logBuf) find(t *testing.T, want map[string]any) map[string]any {
	t.Helper()
	if evs := l.findAll(t, want); len(evs) > 0 {
		return evs[0]
	}
	return nil
}

// findAll returns every event whose fields include all of want, in order.
func (l *logBuf) findAll(t *testing.T, want map[string]any) []map[string]any {
	t.Helper()
	var found []map[string]any
next:
	for _, ev := range l.events(t) {
		for k, v := range want {
			if ev[k] != v {
				continue next
			}
		}
		found = append(found, ev)
	}
	return found
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newLog() (zerolog.Logger, *logBuf) {
	b := &logBuf{}
	return zerolog.New(b).Level(zerolog.DebugLevel), b
}

// waitFor polls cond until it holds or 10s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// runAsync runs h under ctx in a goroutine; the channel gets Run's result.
func runAsync(ctx context.Context, h Hook) <-chan error {
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	return done
}

// result waits, bounded, for what runAsync reports.
func result(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return")
		return nil
	}
}

// fakeHook is a Hook made of funcs.
type fakeHook struct {
	name string
	run  func(context.Context) error
}

var _ Hook = fakeHook{}

func (f fakeHook) Name() string                  { return f.name }
func (f fakeHook) Run(ctx context.Context) error { return f.run(ctx) }

func TestRunAll(t *testing.T) {
	t.Parallel()
	log, buf := newLog()
	var order []string
	hs := []Hook{
		fakeHook{"fails", func(context.Context) error { order = append(order, "fails"); return errors.New("boom") }},
		fakeHook{"hangs", func(ctx context.Context) error {
			order = append(order, "hangs")
			<-ctx.Done()
			return ended(ctx, 0)
		}},
		fakeHook{"works", func(context.Context) error { order = append(order, "works"); return nil }},
	}
	RunAll(context.Background(), log, 50*time.Millisecond, hs)

	if got := strings.Join(order, ","); got != "fails,hangs,works" {
		t.Errorf("ran %s, want each hook once, in order, failures not stopping the rest", got)
	}
	if ev := buf.find(t, map[string]any{"hook": "fails", "level": "warn"}); ev == nil || ev["error"] != "boom" {
		t.Errorf("failure not logged with its error: %v\n%s", ev, buf)
	}
	ev := buf.find(t, map[string]any{"hook": "hangs", "level": "warn"})
	if ev == nil || !strings.Contains(fmt.Sprint(ev["error"]), "timed out") ||
		!strings.Contains(fmt.Sprint(ev["error"]), "hook timeout of 50ms reached") {
		t.Errorf("hook timeout not logged as such: %v\n%s", ev, buf)
	}
	if buf.find(t, map[string]any{"hook": "works", "level": "info", "message": "hook done"}) == nil {
		t.Errorf("success not logged:\n%s", buf)
	}
}

func TestRunAllSkipsWhenNoTimeLeft(t *testing.T) {
	t.Parallel()
	log, buf := newLog()
	ctx, cancel := context.WithCancel(context.Background())
	ran := 0
	RunAll(ctx, log, 0, []Hook{
		fakeHook{"first", func(context.Context) error { ran++; cancel(); return nil }},
		fakeHook{"second", func(context.Context) error { ran++; return nil }},
	})
	if ran != 1 {
		t.Errorf("%d hooks ran, want only the one before ctx ended", ran)
	}
	if buf.find(t, map[string]any{"hook": "second", "message": "hook skipped: no time left"}) == nil {
		t.Errorf("skip not logged:\n%s", buf)
	}
}

func TestChildren(t *testing.T) {
	t.Parallel()
	var c Children
	exited := unix.WaitStatus(3 << 8) // exit status 3
	stopped := unix.WaitStatus(unix.SIGSTOP<<8 | 0x7f)

	// The reaper never waits for a fork in progress (an exec held up opening its program, on a
	// hung volume, held up every reap, and the whole supervisor's loop with them), and a status
	// it collects meanwhile for the pid the fork then returns still reaches the hook.
	pid, ch, err := c.start(func() (int, error) {
		routed := make(chan bool, 1)
		go func() { routed <- c.Exited(4242, exited) }()
		select {
		case claimed := <-routed:
			if claimed {
				t.Error("Exited claimed pid 4242 before the fork returned it")
			}
		case <-time.After(5 * time.Second):
			t.Error("Exited waited for a fork in progress")
		}
		return 4242, nil
	})
	if err != nil || pid != 4242 {
		t.Fatalf("start = %d, %v", pid, err)
	}
	select {
	case ws := <-ch:
		if ws != exited {
			t.Errorf("status %v routed, want %v", ws, exited)
		}
	default:
		t.Error("the status was not routed to the channel start returned")
	}
	if c.Exited(4242, exited) {
		t.Error("a pid whose final status was routed is still claimed (a reused pid would be taken)")
	}
	if c.Exited(1, exited) {
		t.Error("Exited claimed a pid no hook started")
	}

	pid, ch, _ = c.start(func() (int, error) { return 77, nil })
	if !c.Exited(pid, stopped) {
		t.Error("a stopped hook process not recognised as a hook's")
	}
	select {
	case ws := <-ch:
		t.Errorf("a stop (%v) was routed as the final status", ws)
	default:
	}
	c.forget(pid)
	if c.Exited(pid, exited) {
		t.Error("a forgotten pid is still claimed")
	}

	if _, _, err := c.start(func() (int, error) { return 0, unix.ENOENT }); !errors.Is(err, unix.ENOENT) {
		t.Errorf("fork error not returned: %v", err)
	}
}

func TestCopyLines(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", maxLine+100)
	in := "one\r\n\ntwo\n" + long + "\nlast without newline"
	var got []string
	copyLines(strings.NewReader(in), realClock, func(l []byte) bool { got = append(got, string(l)); return true })
	want := []string{"one", "two", long[:maxLine], long[maxLine:], "last without newline"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("lines = %q, want %q", got, want)
	}
}
