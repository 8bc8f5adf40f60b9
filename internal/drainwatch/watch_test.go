package drainwatch

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/drainit/drainit/internal/config"
)

// fakeSystem is an env on a made-up clock: waiting moves the clock, and connections arrive at
// set times after the start.
type fakeSystem struct {
	t0       time.Time
	now      time.Time
	arrivals []time.Duration // when connections arrive, after t0, in order
	cost     time.Duration   // CPU time of each poll
	openErr  error
	setup    Setup // what open says it found
	failAt   int   // the poll (1-based, the baseline is 1) that fails; 0: none
	polls    []time.Time
	lastSeen time.Time
}

func newFakeSystem() *fakeSystem {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	return &fakeSystem{t0: t0, now: t0, lastSeen: t0}
}

func (f *fakeSystem) env() env {
	return env{
		now: func() time.Time { return f.now },
		wait: func(ctx context.Context, until time.Time) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if until.After(f.now) {
				f.now = until
			}
			return nil
		},
		measure: func(fn func()) time.Duration { fn(); return f.cost },
		open: func(Config) (sampler, Setup, error) {
			if f.openErr != nil {
				return nil, f.setup, f.openErr
			}
			return f, f.setup, nil
		},
	}
}

func (f *fakeSystem) sample() (int, error) {
	f.polls = append(f.polls, f.now)
	if len(f.polls) == f.failAt {
		return 0, errors.New("table gone")
	}
	// arrivals are in order: those in (lastSeen, now].
	n := f.arrivedBy(f.now) - f.arrivedBy(f.lastSeen)
	f.lastSeen = f.now
	return n, nil
}

// arrivedBy is how many arrivals came at or before t.
func (f *fakeSystem) arrivedBy(t time.Time) int {
	return sort.Search(len(f.arrivals), func(i int) bool { return f.t0.Add(f.arrivals[i]).After(t) })
}

func (f *fakeSystem) method() Method             { return "fake" }
func (f *fakeSystem) watched() []config.Endpoint { return []config.Endpoint{{Port: 8080}} }
func (f *fakeSystem) close()                     {}

func (f *fakeSystem) run(t *testing.T, cfg Config) Result {
	t.Helper()
	return runEnv(t, cfg, f.env())
}

func every(step, until time.Duration) []time.Duration {
	var out []time.Duration
	for d := step; d <= until; d += step {
		out = append(out, d)
	}
	return out
}

func TestWatchQuiet(t *testing.T) {
	f := newFakeSystem()
	f.arrivals = []time.Duration{50 * time.Millisecond, 300 * time.Millisecond, 1150 * time.Millisecond}
	cfg := Config{AppPID: 1, Quiet: time.Second, Interval: 100 * time.Millisecond}
	r := f.run(t, cfg)
	if r.Reason != ReasonQuiet || r.NewConns != 3 || r.Err != nil || r.Method != "fake" {
		t.Fatalf("result %+v, want quiet after 3 new connections", r)
	}
	last := f.arrivals[len(f.arrivals)-1]
	if r.Elapsed < last+cfg.Quiet || r.Elapsed > last+cfg.Quiet+cfg.Interval {
		t.Errorf("ended after %s; want quiet %s after the last connection (%s), within one interval", r.Elapsed, cfg.Quiet, last)
	}
}

func TestWatchMax(t *testing.T) {
	f := newFakeSystem()
	f.arrivals = every(300*time.Millisecond, time.Minute)
	cfg := Config{AppPID: 1, Quiet: time.Second, Max: 3 * time.Second, Interval: 100 * time.Millisecond}
	r := f.run(t, cfg)
	if r.Reason != ReasonMax || r.Elapsed < cfg.Max || r.Elapsed > cfg.Max+cfg.Interval {
		t.Fatalf("result %+v, want max after %s", r, cfg.Max)
	}
	if want := int(cfg.Max / (300 * time.Millisecond)); r.NewConns != want {
		t.Errorf("%d new connections, want %d", r.NewConns, want)
	}
}

func TestWatchMin(t *testing.T) {
	f := newFakeSystem()
	cfg := Config{AppPID: 1, Quiet: 500 * time.Millisecond, Min: 2 * time.Second}
	r := f.run(t, cfg)
	if r.Reason != ReasonQuiet || r.NewConns != 0 || r.Elapsed < cfg.Min || r.Elapsed > cfg.Min+DefaultInterval {
		t.Fatalf("result %+v, want quiet at the minimum %s", r, cfg.Min)
	}
}

func TestWatchUnavailable(t *testing.T) {
	f := newFakeSystem()
	f.openErr = errors.New("no /proc/net/tcp")
	r := f.run(t, Config{AppPID: 1})
	if r.Reason != ReasonUnavailable || !errors.Is(r.Err, f.openErr) || len(f.polls) != 0 || r.Elapsed != 0 {
		t.Fatalf("result %+v, want unavailable at once with the open error", r)
	}

	f = newFakeSystem()
	r = f.run(t, Config{AppPID: 1, Min: 5 * time.Second, Max: 2 * time.Second})
	if r.Reason != ReasonUnavailable || r.Err == nil || !strings.Contains(r.Err.Error(), "minimum 5s exceeds the maximum 2s") {
		t.Fatalf("result %+v, want unavailable for min > max", r)
	}

	f = newFakeSystem()
	r = f.run(t, Config{})
	if r.Reason != ReasonUnavailable || r.Err == nil || !strings.Contains(r.Err.Error(), "nothing to watch") {
		t.Fatalf("result %+v, want unavailable without pid or ports", r)
	}
	if err := (Config{Quiet: time.Second, Max: 10 * time.Second}).Validate(); err != nil {
		t.Errorf("durations alone, before there is an app: %v", err)
	}
	if err := (Config{Min: DefaultMax + time.Second}).Validate(); err == nil {
		t.Errorf("a minimum over the default maximum passed")
	}

	f = newFakeSystem()
	f.failAt = 1
	r = f.run(t, Config{AppPID: 1})
	if r.Reason != ReasonUnavailable || r.Err == nil || !strings.Contains(r.Err.Error(), "taking the baseline") {
		t.Fatalf("result %+v, want unavailable for a failed baseline", r)
	}

	f = newFakeSystem()
	f.arrivals = []time.Duration{50 * time.Millisecond}
	f.failAt = 4
	r = f.run(t, Config{AppPID: 1})
	if r.Reason != ReasonUnavailable || r.Err == nil || !strings.Contains(r.Err.Error(), "table gone") || r.NewConns != 1 {
		t.Fatalf("result %+v, want unavailable at the failed poll, with the connection seen before", r)
	}
}

// TestWatchCPUBudget: costly polls are spread out so that they take at most 2% of the time.
func TestWatchCPUBudget(t *testing.T) {
	f := newFakeSystem()
	f.cost = 10 * time.Millisecond
	f.arrivals = every(700*time.Millisecond, 4*time.Second)
	cfg := Config{AppPID: 1, Quiet: 2 * time.Second, Max: 15 * time.Second, Interval: 100 * time.Millisecond}
	r := f.run(t, cfg)
	if r.Reason != ReasonQuiet {
		t.Fatalf("result %+v, want quiet", r)
	}
	prev := f.polls[0] // the baseline
	for _, p := range f.polls[1:] {
		if gap := p.Sub(prev); gap < time.Duration(float64(f.cost)/cpuBudget) {
			t.Fatalf("polls %s apart cost %s each: over %.0f%% of a core", gap, f.cost, cpuBudget*100)
		}
		prev = p
	}
	if r.Interval < time.Duration(float64(f.cost)/cpuBudget) {
		t.Errorf("reported interval %s, shorter than the budget allows", r.Interval)
	}
	// A poll costing more than the maximum allows never runs: the drain ends at the maximum.
	f = newFakeSystem()
	f.cost = time.Second
	cfg = Config{AppPID: 1, Max: 3 * time.Second}
	r = f.run(t, cfg)
	if r.Reason != ReasonMax || r.Elapsed != cfg.Max || len(f.polls) != 1 {
		t.Errorf("result %+v after %d polls; want max at %s, no poll after the baseline", r, len(f.polls), cfg.Max)
	}
}

// TestWatchCancel: cancelling ends the watch and closes the channel without a Result.
func TestWatchCancel(t *testing.T) {
	f := newFakeSystem()
	e := f.env()
	waiting := make(chan struct{})
	e.wait = func(ctx context.Context, _ time.Time) error {
		close(waiting)
		<-ctx.Done()
		return ctx.Err()
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch := start(ctx, Config{AppPID: 1}.withDefaults(), e)
	select {
	case <-waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("the watch never waited for its first poll")
	}
	cancel()
	select {
	case r, ok := <-ch:
		if ok {
			t.Fatalf("got %+v after cancel, want the channel closed", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the channel stayed open after cancel")
	}
}
