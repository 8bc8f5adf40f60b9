package supervisor

import (
	"bytes"
	"encoding/json"
	"io"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/internal/config"
	"github.com/drainit/drainit/internal/drainwatch"
	"github.com/drainit/drainit/signals"
)

// The machine is driven with made-up times: at(s) is s seconds after the app's start.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return epoch.Add(time.Duration(s * float64(time.Second))) }

type mopt func(*config.Config)

func newTestMachine(offline, postStop bool, opts ...mopt) *machine {
	c := &config.Config{
		GracePeriod: 30 * time.Second, DrainDelay: 5 * time.Second, KillMargin: 2 * time.Second,
		CleanupWait: 2 * time.Second, Triggers: []unix.Signal{unix.SIGTERM, unix.SIGINT},
		Rewrite: signals.Rewrite{}, ExitMap: signals.ExitMap{},
	}
	for _, o := range opts {
		o(c)
	}
	return newMachine(c, offline, postStop, epoch, zerolog.Nop())
}

func exited(code int) unix.WaitStatus        { return unix.WaitStatus(code << 8) }
func killedBy(s unix.Signal) unix.WaitStatus { return unix.WaitStatus(s) }

// want compares the actions, leaving out actDrained (the answer to /prestop callers), which the
// prestop tests check with drainedIn.
func want(tb testing.TB, got []action, w ...action) {
	tb.Helper()
	got = slices.DeleteFunc(slices.Clone(got), func(a action) bool { return a == actDrained{} })
	if len(got) == 0 && len(w) == 0 {
		return
	}
	if !reflect.DeepEqual(got, w) {
		tb.Fatalf("actions = %#v\nwant      %#v", got, w)
	}
}

func wantPhase(tb testing.TB, m *machine, p Phase) {
	tb.Helper()
	if m.phase != p {
		tb.Fatalf("phase = %s, want %s", m.phase, p)
	}
}

func TestFullSequenceWithHooks(t *testing.T) {
	m := newTestMachine(true, true)
	// SIGTERM at 10 s: deadline 40 s, kill at 38 s; the hooks end by the stop signal's latest
	// time, 36 s, which leaves the app 2 s.
	want(t, m.signal(at(10), unix.SIGTERM), actRunHooks{config.StageOffline, at(34)})
	wantPhase(t, m, PhaseOffline)
	if !m.deadline().Equal(at(40)) {
		t.Fatalf("deadline = %v, want t0+grace", m.deadline().Sub(epoch))
	}
	// Hooks take 1 s; the drain runs 5 s from their end.
	want(t, m.hooksDone(at(11), config.StageOffline, "1 ok"))
	wantPhase(t, m, PhaseDraining)
	if !m.wake.Equal(at(16)) {
		t.Fatalf("drain ends at %v, want 16s", m.wake.Sub(epoch))
	}
	// Ticks before the wake time do nothing.
	want(t, m.tick(at(15.9)))
	want(t, m.tick(at(16)), actSignal{toAppStop, unix.SIGTERM})
	wantPhase(t, m, PhaseStopping)
	if !m.wake.Equal(at(38)) {
		t.Fatalf("kill at %v, want deadline - margin = 38s", m.wake.Sub(epoch))
	}
	// The app exits after 2 s with 143; nothing else is left.
	want(t, m.noChildren(at(18)))
	want(t, m.appExit(at(18), killedBy(unix.SIGTERM)), actRunHooks{config.StagePostStop, at(39.5)})
	wantPhase(t, m, PhasePostStop)
	want(t, m.hooksDone(at(18.5), config.StagePostStop, "1 ok"), actExit{143})
	s := m.summary(at(18.5))
	for _, part := range []string{"trigger +0s", "offline hooks +0s", "offline hooks: 1 ok +1s", "drain +1s", "stop SIGTERM +6s", "app exited 143 +8s", "post-stop hooks +8s", "exit 143 +8.5s"} {
		if !strings.Contains(s, part) {
			t.Errorf("summary %q lacks %q", s, part)
		}
	}
	if strings.Contains(s, "SIGKILL") {
		t.Errorf("summary %q mentions SIGKILL though drainit sent none", s)
	}
}

func TestForwardingBeforeAndDuringSequence(t *testing.T) {
	m := newTestMachine(false, false, func(c *config.Config) {
		c.Rewrite = signals.Rewrite{unix.SIGHUP: unix.SIGUSR1, unix.SIGWINCH: 0}
	})
	want(t, m.signal(epoch, unix.SIGUSR2), actSignal{toApp, unix.SIGUSR2})
	want(t, m.signal(epoch, unix.SIGHUP), actSignal{toApp, unix.SIGUSR1})
	want(t, m.signal(epoch, unix.SIGWINCH))
	want(t, m.signal(epoch, unix.SIGTERM)) // no hooks: straight into the drain
	wantPhase(t, m, PhaseDraining)
	// Non-trigger signals keep flowing during the drain.
	want(t, m.signal(epoch, unix.SIGUSR2), actSignal{toApp, unix.SIGUSR2})
}

func TestStopSignalChoice(t *testing.T) {
	cases := []struct {
		name    string
		opt     mopt
		trigger unix.Signal
		want    []action
	}{
		{"trigger as received", func(*config.Config) {}, unix.SIGINT, []action{actSignal{toAppStop, unix.SIGINT}}},
		{"--stop-signal replaces it", func(c *config.Config) { c.StopSignal = unix.SIGQUIT }, unix.SIGTERM, []action{actSignal{toAppStop, unix.SIGQUIT}}},
		{"rewritten", func(c *config.Config) { c.Rewrite = signals.Rewrite{unix.SIGTERM: unix.SIGUSR2} }, unix.SIGTERM, []action{actSignal{toAppStop, unix.SIGUSR2}}},
		{"rewritten to nothing", func(c *config.Config) { c.Rewrite = signals.Rewrite{unix.SIGTERM: 0} }, unix.SIGTERM, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newTestMachine(false, false, c.opt)
			m.signal(at(0), c.trigger)
			want(t, m.tick(at(5)), c.want...)
			wantPhase(t, m, PhaseStopping)
		})
	}
}

// With --stop-signal QUIT, a SIGQUIT from the runtime (an image's STOPSIGNAL) starts the stop
// sequence: the app gets nothing until the drain is over, then SIGQUIT. Without it, SIGQUIT goes
// to the app at once (a thread dump) and nothing starts. The configuration goes through
// config.Parse, where the rule lives.
func TestStopSignalStartsTheSequence(t *testing.T) {
	newParsed := func(args ...string) *machine {
		t.Helper()
		c, err := config.Parse(append(args, "app"), nil, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		return newMachine(c, false, false, epoch, zerolog.Nop())
	}
	m := newParsed("--stop-signal", "QUIT")
	want(t, m.signal(at(0), unix.SIGQUIT))
	wantPhase(t, m, PhaseDraining)
	want(t, m.tick(at(4.9)))
	want(t, m.tick(at(5)), actSignal{toAppStop, unix.SIGQUIT})
	wantPhase(t, m, PhaseStopping)
	// The kubelet's SIGTERM stops it the same way.
	m = newParsed("--stop-signal", "QUIT")
	want(t, m.signal(at(0), unix.SIGTERM))
	want(t, m.tick(at(5)), actSignal{toAppStop, unix.SIGQUIT})

	m = newParsed()
	want(t, m.signal(at(0), unix.SIGQUIT), actSignal{toApp, unix.SIGQUIT})
	wantPhase(t, m, PhaseRunning)
	if !m.t0.IsZero() {
		t.Error("a forwarded SIGQUIT started the stop sequence")
	}
}

// With --triggers= and no --stop-signal every signal is forwarded, as dumb-init does, and only
// /prestop starts the stop sequence (README: "What starts it").
func TestNoTriggersForwardsEverything(t *testing.T) {
	c, err := config.Parse([]string{"--triggers=", "app"}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	m := newMachine(c, false, false, epoch, zerolog.Nop())
	for _, sig := range []unix.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGINT, unix.SIGINT, unix.SIGQUIT} {
		want(t, m.signal(at(1), sig), actSignal{toApp, sig})
	}
	wantPhase(t, m, PhaseRunning)
	if !m.t0.IsZero() {
		t.Fatal("a signal started the stop sequence with no trigger")
	}
	m.prestop(at(2), false)
	wantPhase(t, m, PhaseDraining)
	if !m.deadline().Equal(at(32)) {
		t.Fatalf("deadline %v, want the /prestop's time + grace", m.deadline().Sub(epoch))
	}
}

func TestEscalationBeforeDeadline(t *testing.T) {
	m := newTestMachine(false, true)
	m.signal(at(0), unix.SIGTERM)
	want(t, m.tick(at(5)), actSignal{toAppStop, unix.SIGTERM})
	// The app ignores SIGTERM: at deadline - margin everything gets SIGKILL.
	want(t, m.tick(at(28)), actSignal{toEverything, unix.SIGKILL})
	wantPhase(t, m, PhaseKilling)
	if !m.wake.Equal(at(29.5)) {
		t.Fatalf("gives up on the reaper at %v, want the post-stop hooks' deadline, %v", m.wake.Sub(epoch), at(29.5).Sub(epoch))
	}
	m.noChildren(at(28.01))
	// The post-stop hooks get the kill margin less half a second (their SIGKILL at the deadline
	// and drainit's exit), not less the offline hooks' 2 s, which would leave them nothing.
	want(t, m.appExit(at(28.01), killedBy(unix.SIGKILL)), actRunHooks{config.StagePostStop, at(29.5)})
	want(t, m.hooksDone(at(29), config.StagePostStop, "1 ok"), actExit{137})
	if s := m.summary(at(29)); !strings.Contains(s, "drainit had to SIGKILL") {
		t.Errorf("summary %q does not say drainit had to SIGKILL", s)
	}
}

// Slow offline hooks cut the drain short, not the app's stop: the stop signal goes out 2 s before
// the kill point at the latest (stopBy). It went out at the kill point, in the same millisecond
// as the SIGKILL, after hooks that had used the time up to it.
func TestHooksLongerThanBudgetSkipDrain(t *testing.T) {
	m := newTestMachine(true, false)
	m.signal(at(0), unix.SIGTERM)
	// Offline hooks ran until 25 s: 1 s is left before stopBy (26 s), so the drain is cut to it.
	want(t, m.hooksDone(at(25), config.StageOffline, "1 ok"))
	if !m.wake.Equal(at(26)) {
		t.Fatalf("drain ends at %v, want 26s, 2s before the kill point", m.wake.Sub(epoch))
	}
	// Hooks that end at stopBy or later: the stop signal goes out at once, the SIGKILL 2 s on.
	for _, end := range []float64{26, 27.5} {
		m = newTestMachine(true, false)
		m.signal(at(0), unix.SIGTERM)
		want(t, m.hooksDone(at(end), config.StageOffline, "1 ok"), actSignal{toAppStop, unix.SIGTERM})
		if !m.wake.Equal(at(28)) {
			t.Fatalf("hooks done at %vs: SIGKILL at %v, want the kill point 28s", end, m.wake.Sub(epoch))
		}
	}
	// Hooks that never end (an exec that hangs opening its program): the sequence goes on
	// without them at stopBy.
	m = newTestMachine(true, false)
	m.signal(at(0), unix.SIGTERM)
	want(t, m.tick(at(25.9)))
	want(t, m.tick(at(26)), actCancelHooks{config.StageOffline}, actSignal{toAppStop, unix.SIGTERM})
	want(t, m.hooksDone(at(27), config.StageOffline, "1 failed")) // late: ignored
	// Where the configuration leaves the app less than 2 s, that is what it keeps.
	m = newTestMachine(true, false, func(c *config.Config) { c.DrainDelay = 27500 * time.Millisecond })
	m.signal(at(0), unix.SIGTERM)
	want(t, m.hooksDone(at(25), config.StageOffline, "1 ok"))
	if !m.wake.Equal(at(27.5)) {
		t.Fatalf("drain ends at %v, want 27.5s (grace 30s - margin 2s - drain 27.5s leaves the app 0.5s)", m.wake.Sub(epoch))
	}
}

func TestRepeatedTriggersJoin(t *testing.T) {
	m := newTestMachine(true, false)
	want(t, m.signal(at(0), unix.SIGTERM), actRunHooks{config.StageOffline, at(24)})
	// A second SIGTERM (kubelet restart, docker stop twice) runs nothing again.
	want(t, m.signal(at(1), unix.SIGTERM))
	wantPhase(t, m, PhaseOffline)
	want(t, m.hooksDone(at(2), config.StageOffline, "1 ok"))
	want(t, m.signal(at(3), unix.SIGTERM))
	wantPhase(t, m, PhaseDraining)
	if !m.deadline().Equal(at(30)) {
		t.Fatalf("a repeated trigger moved the deadline to %v", m.deadline().Sub(epoch))
	}
}

func TestCtrlCTwiceAndThrice(t *testing.T) {
	m := newTestMachine(true, false)
	m.signal(at(0), unix.SIGINT)
	// The second Ctrl-C skips the rest of the offline hooks and the drain.
	want(t, m.signal(at(1), unix.SIGINT), actCancelHooks{config.StageOffline}, actSignal{toAppStop, unix.SIGINT})
	wantPhase(t, m, PhaseStopping)
	// Late hook results are ignored.
	want(t, m.hooksDone(at(1.5), config.StageOffline, "1 ok"))
	// The third kills.
	want(t, m.signal(at(2), unix.SIGINT), actSignal{toEverything, unix.SIGKILL})
	wantPhase(t, m, PhaseKilling)

	// A SIGTERM trigger followed by one SIGINT is not "twice": the first Ctrl-C only joins.
	m = newTestMachine(false, false)
	m.signal(at(0), unix.SIGTERM)
	want(t, m.signal(at(1), unix.SIGINT))
	wantPhase(t, m, PhaseDraining)
	want(t, m.signal(at(2), unix.SIGINT), actSignal{toAppStop, unix.SIGTERM})

	// After a /prestop, the first Ctrl-C is the signal the stop waits for, and it counts: the
	// second skips the drain, the third kills (it took a third and a fourth).
	m = newTestMachine(false, false)
	m.prestop(at(0), false)
	want(t, m.signal(at(1), unix.SIGINT))
	wantPhase(t, m, PhaseDraining)
	want(t, m.signal(at(2), unix.SIGINT), actSignal{toAppStop, unix.SIGINT})
	want(t, m.signal(at(3), unix.SIGINT), actSignal{toEverything, unix.SIGKILL})
}

// TestAppExitsInEachPhase: the app crashes in each phase and leaves nothing behind. The
// post-stop hooks run and drainit exits with the app's status. The offline hooks run first for an
// app that may have been in service: before a trigger they start at the exit; after one, they
// are not cut short by it. The post-stop hooks wait for them.
func TestAppExitsInEachPhase(t *testing.T) {
	steps := map[Phase]func(m *machine){
		PhaseRunning:  func(m *machine) { m.putInService() },
		PhaseOffline:  func(m *machine) { m.signal(at(0), unix.SIGTERM) },
		PhaseDraining: func(m *machine) { m.signal(at(0), unix.SIGTERM); m.hooksDone(at(1), config.StageOffline, "1 ok") },
		PhaseStopping: func(m *machine) {
			m.signal(at(0), unix.SIGTERM)
			m.hooksDone(at(1), config.StageOffline, "1 ok")
			m.tick(at(6))
		},
	}
	for phase, step := range steps {
		t.Run(phase.String(), func(t *testing.T) {
			m := newTestMachine(true, true)
			step(m)
			wantPhase(t, m, phase)
			// The app crashes with 139 (SEGV) and leaves nothing behind.
			m.noChildren(at(7))
			acts := m.appExit(at(7), killedBy(unix.SIGSEGV))
			postStop := actRunHooks{config.StagePostStop, at(29.5)}
			switch phase {
			case PhaseRunning:
				// No trigger: the offline hooks start now, bounded by their own timeouts only,
				// and the post-stop hooks after them, with no deadline either.
				want(t, acts, actRunHooks{config.StageOffline, time.Time{}})
				if s := m.summary(at(7)); !strings.Contains(s, "offline hooks (app exited) +7s") {
					t.Errorf("summary %q does not say the offline hooks ran for the exit", s)
				}
				postStop.deadline = time.Time{}
				fallthrough
			case PhaseOffline:
				wantPhase(t, m, PhaseOffline)
				if phase == PhaseOffline {
					want(t, acts) // the stop's offline hooks are not cancelled
				}
				if phase == PhaseRunning {
					want(t, m.tick(at(100))) // no trigger, no deadline: no timer that could act
				}
				want(t, m.hooksDone(at(8), config.StageOffline, "1 ok"), postStop)
			default:
				want(t, acts, postStop)
			}
			wantPhase(t, m, PhasePostStop)
			want(t, m.tick(at(100)))
			want(t, m.hooksDone(at(9), config.StagePostStop, "1 ok"), actExit{139})
		})
	}
}

// TestAppExitsBeforeService: an app that crashes before its probe ever passed was never
// registered: the offline hooks (deregistration) do not run, nor once it has exited.
func TestAppExitsBeforeService(t *testing.T) {
	m := newTestMachine(true, false)
	want(t, m.noChildren(at(1)))
	want(t, m.appExit(at(1), exited(1)), actExit{1})

	// The probe's report that comes after the exit does not change that.
	m = newTestMachine(true, false)
	m.appExit(at(1), exited(1))
	m.putInService()
	if m.inService {
		t.Fatal("an app that had exited was put in service")
	}
	// Nor after a trigger (the stop sequence has run the offline hooks already).
	m = newTestMachine(true, false)
	m.signal(at(0), unix.SIGTERM)
	m.putInService()
	if m.inService {
		t.Fatal("an app being stopped was put in service")
	}
}

// TestOfflineHooksBeforeLeftovers: what the app left behind is ended after the offline hooks that
// run for its exit, not meanwhile: SIGTERM to everything would reach the hooks' own processes
// (as PID 1, kill(-1) spares none). A trigger while they run bounds them by its kill point; a
// second Ctrl-C skips the rest of them.
func TestOfflineHooksBeforeLeftovers(t *testing.T) {
	for _, trigger := range []string{"none", "SIGTERM", "SIGINT twice"} {
		t.Run(trigger, func(t *testing.T) {
			m := newTestMachine(true, false)
			m.putInService()
			want(t, m.appExit(at(5), exited(2)), actRunHooks{config.StageOffline, time.Time{}})
			wantPhase(t, m, PhaseOffline)
			done := at(7)
			switch trigger {
			case "SIGTERM":
				want(t, m.signal(at(6), unix.SIGTERM), actSignal{toApp, unix.SIGTERM},
					actHooksDeadline{config.StageOffline, at(32)})
			case "SIGINT twice":
				want(t, m.signal(at(6), unix.SIGINT), actSignal{toApp, unix.SIGINT},
					actHooksDeadline{config.StageOffline, at(32)})
				want(t, m.signal(at(6.5), unix.SIGINT), actSignal{toApp, unix.SIGINT},
					actCancelHooks{config.StageOffline}, actSignal{toEverything, unix.SIGTERM})
				wantPhase(t, m, PhaseCleanup)
				want(t, m.hooksDone(at(7), config.StageOffline, "1 cancelled")) // already moved on
				done = time.Time{}
			}
			if !done.IsZero() {
				// The leftovers get nothing until the hooks have ended, and then SIGTERM.
				want(t, m.hooksDone(done, config.StageOffline, "1 ok"), actSignal{toEverything, unix.SIGTERM})
			}
			wantPhase(t, m, PhaseCleanup)
			want(t, m.noChildren(at(8)), actExit{2})
		})
	}
}

// TestNoChildrenWhileOfflineHooksRun: the leftovers end (or an HTTP hook leaves drainit with no
// child) while the offline hooks run after the app's exit: drainit exits when the hooks end, not
// before, and sends nothing to anyone.
func TestNoChildrenWhileOfflineHooksRun(t *testing.T) {
	m := newTestMachine(true, false)
	m.putInService()
	want(t, m.appExit(at(5), exited(4)), actRunHooks{config.StageOffline, time.Time{}})
	want(t, m.noChildren(at(6)))
	wantPhase(t, m, PhaseOffline)
	want(t, m.hooksDone(at(7), config.StageOffline, "1 ok"), actExit{4})
	if s := m.summaryLine; !strings.Contains(s, "offline hooks (app exited) +5s; offline hooks: 1 ok +7s; exit 4 +7s") {
		t.Errorf("summary %q does not show the offline hooks' run after the exit", s)
	}
}

func TestLeftoversAfterAppExit(t *testing.T) {
	m := newTestMachine(false, false)
	// The app exits on its own but a daemon it started lives on.
	want(t, m.appExit(at(5), exited(0)), actSignal{toEverything, unix.SIGTERM})
	wantPhase(t, m, PhaseCleanup)
	if !m.wake.Equal(at(7)) {
		t.Fatalf("leftovers get %v, want the cleanup wait", m.wake.Sub(at(5)))
	}
	// The daemon ignores SIGTERM.
	want(t, m.tick(at(7)), actSignal{toEverything, unix.SIGKILL})
	want(t, m.noChildren(at(7.01)), actExit{0})

	// Leftovers that go on SIGTERM: exit at once, the app's status kept.
	m = newTestMachine(false, false)
	m.appExit(at(5), exited(3))
	want(t, m.noChildren(at(5.1)), actExit{3})
}

// TestKillingRepeatsOnEachReap: while killing, each reap that leaves processes behind sends
// SIGKILL to everything again (a process that forks on and on escapes any one walk of /proc);
// before it, reaps send nothing, and the wait for the reaper keeps its end.
func TestKillingRepeatsOnEachReap(t *testing.T) {
	m := newTestMachine(false, false)
	want(t, m.reapedSome(at(1)))
	want(t, m.appExit(at(5), exited(0)), actSignal{toEverything, unix.SIGTERM})
	want(t, m.reapedSome(at(5.5)))
	want(t, m.tick(at(7)), actSignal{toEverything, unix.SIGKILL})
	wake := m.wake
	for _, s := range []float64{7.01, 7.02, 7.5} {
		want(t, m.reapedSome(at(s)), actSignal{toEverything, unix.SIGKILL})
		wantPhase(t, m, PhaseKilling)
	}
	if !m.wake.Equal(wake) {
		t.Errorf("the wait for the reaper ends at %v, want %v as before the reaps", m.wake.Sub(epoch), wake.Sub(epoch))
	}
	want(t, m.noChildren(at(7.6)), actExit{0})
	want(t, m.reapedSome(at(7.7)))
}

func TestCleanupBoundedByKillPoint(t *testing.T) {
	m := newTestMachine(false, false, func(c *config.Config) { c.CleanupWait = 10 * time.Second })
	m.signal(at(0), unix.SIGTERM)
	m.tick(at(5))
	// The app exits at 27 s; its leftovers get SIGTERM but must be dead by the kill point, 28 s.
	want(t, m.appExit(at(27), exited(0)), actSignal{toEverything, unix.SIGTERM})
	if !m.wake.Equal(at(28)) {
		t.Fatalf("cleanup ends at %v, want the kill point", m.wake.Sub(epoch))
	}
}

func TestExitMapAndGiveUp(t *testing.T) {
	m := newTestMachine(false, false, func(c *config.Config) { c.ExitMap = signals.ExitMap{143: 0} })
	m.signal(at(0), unix.SIGTERM)
	m.tick(at(5))
	m.noChildren(at(6))
	want(t, m.appExit(at(6), killedBy(unix.SIGTERM)), actExit{0})

	// A process that survives SIGKILL (stuck in D state) does not hold drainit up to the
	// deadline, where the runtime's SIGKILL would race its exit and its summary: drainit goes on
	// without it 0.5 s before, with post-stop hooks too (they get no time left, and are skipped).
	for _, postStop := range []bool{false, true} {
		m = newTestMachine(false, postStop)
		m.signal(at(0), unix.SIGTERM)
		m.tick(at(5))
		m.tick(at(28))
		want(t, m.tick(at(29.49)))
		want(t, m.tick(at(29.5)), actSurvivors{})
		acts := []action{actExit{137}}
		if postStop {
			acts = []action{actRunHooks{config.StagePostStop, at(29.5)}}
		}
		want(t, m.survivorsLogged(at(29.5)), acts...)
	}
}

func drainedIn(acts []action) bool { return slices.Contains(acts, action(actDrained{})) }

func TestPrestopThenKubeletSignal(t *testing.T) {
	m := newTestMachine(true, false)
	// The kubelet calls /prestop at 10 s: the sequence starts then, not at the SIGTERM.
	acts := m.prestop(at(10), false)
	want(t, acts, actRunHooks{config.StageOffline, at(34)})
	if drainedIn(acts) {
		t.Fatal("/prestop answered before the drain")
	}
	// A second, concurrent call joins: nothing runs again, no answer yet.
	want(t, m.prestop(at(10.5), false))
	if acts := m.hooksDone(at(11), config.StageOffline, "1 ok"); drainedIn(acts) || len(acts) != 0 {
		t.Fatalf("after the hooks: %#v", acts)
	}
	// End of the drain: the callers get their answer; the app keeps running until the SIGTERM.
	acts = m.tick(at(16))
	if !drainedIn(acts) {
		t.Fatalf("drain over but /prestop not answered: %#v", acts)
	}
	want(t, acts)
	wantPhase(t, m, PhaseDrained)
	// A call after the drain is answered at once.
	if !drainedIn(m.prestop(at(16.2), false)) {
		t.Fatal("/prestop after the drain not answered at once")
	}
	// The kubelet's SIGTERM: straight to the stop step, no second drain.
	want(t, m.signal(at(16.3), unix.SIGTERM), actSignal{toAppStop, unix.SIGTERM})
	wantPhase(t, m, PhaseStopping)
	if !m.wake.Equal(at(38)) {
		t.Fatalf("kill at %v, want /prestop time + grace - margin", m.wake.Sub(epoch))
	}
}

// TestPrestopSignalDuringDrain: a stop signal that comes while a /prestop call that is not the
// kubelet's waits for the drain (a deploy tool's, or a person's) starts nothing new: the drain
// ends as configured, then the stop signal goes out.
func TestPrestopSignalDuringDrain(t *testing.T) {
	m := newTestMachine(false, false, func(c *config.Config) { c.StopSignal = unix.SIGQUIT })
	m.prestop(at(0), false)
	want(t, m.signal(at(2), unix.SIGTERM))
	wantPhase(t, m, PhaseDraining)
	acts := m.tick(at(5))
	if !drainedIn(acts) {
		t.Fatal("/prestop not answered at the end of the drain")
	}
	want(t, acts, actSignal{toAppStop, unix.SIGQUIT})
}

// TestKubeletGraceRanOutDuringDrain: the kubelet's /prestop still waits when its stop signal
// comes, so its wait for the hook took the pod's whole grace period, shorter than drainit's
// (kubectl delete --grace-period 3 here, drainit told 30 s): the runtime's SIGKILL follows in
// 2 s. The app gets its stop signal at once, not at the drain's end, after which that SIGKILL
// would have come first; drainit's SIGKILL comes 1 s later, and the post-stop hooks and the exit
// fit before the runtime's. Before, the drain went on to its end at 5 s.
func TestKubeletGraceRanOutDuringDrain(t *testing.T) {
	for _, c := range []struct {
		name    string
		offline bool
		drain   func(c *config.Config)
	}{
		{"fixed drain", false, func(c *config.Config) { c.StopSignal = unix.SIGQUIT }},
		{"adaptive drain", false, func(c *config.Config) {
			c.StopSignal, c.Adaptive, c.DrainMin, c.DrainMax = unix.SIGQUIT, true, 0, 20*time.Second
		}},
		{"offline hooks running", true, func(c *config.Config) { c.StopSignal = unix.SIGQUIT }},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := newTestMachine(c.offline, true, c.drain)
			m.prestop(at(0), false) // another caller's first: the kubelet's joins
			m.prestop(at(0.01), true)
			sig := at(3.02)
			acts := m.signal(sig, unix.SIGTERM)
			if !drainedIn(acts) {
				t.Errorf("the /prestop callers were not answered: %#v", acts)
			}
			if !slices.Contains(acts, action(actSignal{toAppStop, unix.SIGQUIT})) {
				t.Fatalf("no stop signal to the app when the kubelet's grace ran out: %#v", acts)
			}
			if c.offline && !slices.Contains(acts, action(actCancelHooks{config.StageOffline})) {
				t.Errorf("the offline hooks were not stopped: %#v", acts)
			}
			wantPhase(t, m, PhaseStopping)
			deadline, kill := sig.Add(2*time.Second), sig.Add(time.Second)
			if !m.deadline().Equal(deadline) || !m.wake.Equal(kill) {
				t.Errorf("deadline %v, kill at %v; want 5.02s (2 s after the signal) and 4.02s",
					m.deadline().Sub(epoch), m.wake.Sub(epoch))
			}
			want(t, m.tick(kill), actSignal{toEverything, unix.SIGKILL})
			m.noChildren(at(4.03))
			acts = m.appExit(at(4.03), killedBy(unix.SIGKILL))
			var run *actRunHooks
			for _, a := range acts {
				if r, ok := a.(actRunHooks); ok && r.stage == config.StagePostStop {
					run = &r
				}
			}
			if run == nil || !run.deadline.Before(deadline) || !run.deadline.After(at(4.03)) {
				t.Fatalf("post-stop hooks %+v, want them run with a deadline before 5.02s", run)
			}
		})
	}

	// The kubelet's wait never runs out where drainit's grace period is no longer than the pod's:
	// the drain ends, /prestop is answered, and the signal follows it, as ever.
	m := newTestMachine(false, false)
	m.prestop(at(0), true)
	if !drainedIn(m.tick(at(5))) {
		t.Fatal("/prestop not answered at the end of the drain")
	}
	want(t, m.signal(at(5.01), unix.SIGTERM), actSignal{toAppStop, unix.SIGTERM})
	if !m.deadline().Equal(at(30)) || !m.wake.Equal(at(28)) {
		t.Errorf("deadline %v, kill at %v; want 30s and 28s", m.deadline().Sub(epoch), m.wake.Sub(epoch))
	}
}

func TestPrestopWithoutSignal(t *testing.T) {
	// Nobody sends a signal after /prestop: drainit stops the app itself at the kill point and
	// kills it at the deadline.
	m := newTestMachine(false, false)
	m.prestop(at(0), false)
	m.tick(at(5))
	wantPhase(t, m, PhaseDrained)
	want(t, m.tick(at(28)), actSignal{toAppStop, unix.SIGTERM})
	want(t, m.tick(at(30)), actSignal{toEverything, unix.SIGKILL})

	// The SIGTERM drainit stands in for goes through --rewrite, as the kubelet's would have.
	m = newTestMachine(false, false, func(c *config.Config) { c.Rewrite = signals.Rewrite{unix.SIGTERM: unix.SIGQUIT} })
	m.prestop(at(0), false)
	m.tick(at(5))
	want(t, m.tick(at(28)), actSignal{toAppStop, unix.SIGQUIT})
}

// TestPrestopSignalAfterDrainitStopped: the drain ran to its latest end (slow offline hooks), so
// no signal had come when it ended and drainit stopped the app itself, leaving it until the
// deadline. The kubelet's SIGTERM, sent as soon as its preStop wait ended, comes just after: the
// kubelet's SIGKILL is due at the deadline, so drainit's must come at the kill point, not race
// the kubelet's there.
func TestPrestopSignalAfterDrainitStopped(t *testing.T) {
	m := newTestMachine(true, false)
	m.prestop(at(0), false)
	if acts := m.hooksDone(at(26), config.StageOffline, "1 failed"); !drainedIn(acts) {
		t.Fatalf("the drain ended at once (its latest end, 2s before the kill point) but /prestop was not answered: %#v", acts)
	}
	wantPhase(t, m, PhaseDrained)
	want(t, m.tick(at(28)), actSignal{toAppStop, unix.SIGTERM})
	want(t, m.signal(at(28.01), unix.SIGTERM))
	if !m.wake.Equal(at(28)) {
		t.Fatalf("after the kubelet's SIGTERM the kill comes at %v, want the kill point, 28s", m.wake.Sub(epoch))
	}
	want(t, m.tick(at(28.01)), actSignal{toEverything, unix.SIGKILL})
	if n := strings.Count(m.summary(at(28.02)), "stop SIGTERM"); n != 1 {
		t.Errorf("the stop signal is in the summary %d times, want once: %s", n, m.summary(at(28.02)))
	}
}

func TestPrestopAnsweredWhenAppExits(t *testing.T) {
	m := newTestMachine(true, false)
	m.prestop(at(0), false)
	m.noChildren(at(1))
	if acts := m.appExit(at(1), exited(1)); !drainedIn(acts) {
		t.Fatalf("app exited mid-sequence but /prestop callers were left waiting: %#v", acts)
	}
}

func TestKillLateStillWaitsForReaper(t *testing.T) {
	// Offline hooks overran to the deadline itself: the SIGKILL goes out at 30 s, and drainit
	// still gives the reaper reapWait before giving up.
	m := newTestMachine(true, false)
	m.signal(at(0), unix.SIGTERM)
	m.hooksDone(at(28), config.StageOffline, "1 ok")
	m.tick(at(30))
	wantPhase(t, m, PhaseKilling)
	if got := m.wake.Sub(at(30)); got != reapWait {
		t.Fatalf("waits %v for the reaper after a late SIGKILL, want %v", got, reapWait)
	}
	want(t, m.tick(at(30.5)))
	m.noChildren(at(30.6))
	want(t, m.appExit(at(30.6), killedBy(unix.SIGKILL)), actExit{137})
}

func adaptive(c *config.Config) {
	c.Adaptive, c.DrainMax = true, 15*time.Second
}

func TestAdaptiveDrainEndsWhenQuiet(t *testing.T) {
	m := newTestMachine(false, false, adaptive)
	want(t, m.signal(at(0), unix.SIGTERM), actWatchDrain{0, 15 * time.Second})
	wantPhase(t, m, PhaseDraining)
	// The watcher saw traffic stop after 2.4 s: the stop signal goes out then, not at 5 s or 15 s.
	want(t, m.drainWatched(at(2.4), drainwatch.Result{Reason: drainwatch.ReasonQuiet, NewConns: 7}),
		actSignal{toAppStop, unix.SIGTERM})
	if s := m.summary(at(3)); !strings.Contains(s, "drain ended: quiet, 7 new connections +2.4s") {
		t.Errorf("summary %q does not say what ended the drain", s)
	}
	// A late report is ignored.
	want(t, m.drainWatched(at(3), drainwatch.Result{Reason: drainwatch.ReasonMax}))
}

// --drain-quiet auto (issue 16): the log says the rate the silence was judged at and the
// silence it needed and waited, and why a drain that waited for its maximum did.
func TestAdaptiveDrainLogsTheRate(t *testing.T) {
	var buf bytes.Buffer
	c := &config.Config{GracePeriod: 30 * time.Second, DrainDelay: 5 * time.Second, KillMargin: 2 * time.Second,
		CleanupWait: 2 * time.Second, Triggers: []unix.Signal{unix.SIGTERM}, Adaptive: true, DrainQuietAuto: true, DrainMax: 15 * time.Second}
	m := newMachine(c, false, false, epoch, zerolog.New(&buf))
	m.signal(at(0), unix.SIGTERM)
	want(t, m.drainWatched(at(1.2), drainwatch.Result{Reason: drainwatch.ReasonQuiet, NewConns: 210, Silence: 104 * time.Millisecond,
		HistoryUsed: true, CPU: 15 * time.Millisecond, Elapsed: 1200 * time.Millisecond,
		Auto: &drainwatch.Estimate{Rate: 198.44, Arrivals: 20, Window: 96 * time.Millisecond, Needed: 100 * time.Millisecond, Enough: true}}),
		actSignal{toAppStop, unix.SIGTERM})
	for _, w := range []string{`"message":"adaptive drain over"`, `"rate":198.4`, `"rate_arrivals":20`, `"silence_needed":100`, `"silence":104`, `"history":true`, `"cpu":15`, `"cpu_share":0.0125`} {
		if !strings.Contains(buf.String(), w) {
			t.Errorf("log lacks %s:\n%s", w, buf.String())
		}
	}
	buf.Reset()
	m = newMachine(c, false, false, epoch, zerolog.New(&buf))
	m.signal(at(0), unix.SIGTERM)
	m.drainWatched(at(15), drainwatch.Result{Reason: drainwatch.ReasonMax, Auto: &drainwatch.Estimate{Arrivals: 3, Window: 30 * time.Second},
		Note: "3 new connections in 30s: too few"})
	if !strings.Contains(buf.String(), `"why":"3 new connections in 30s: too few"`) || !strings.Contains(buf.String(), `"reason":"max"`) {
		t.Errorf("a drain that waited for its maximum does not say why:\n%s", buf.String())
	}
}

// A watcher that never reports (a machine too loaded to run it) leaves the drain to the backstop,
// a second after the end it was given; the log and the summary say so, where they used to show
// no end of the drain at all.
func TestAdaptiveDrainBackstopIsLogged(t *testing.T) {
	var buf bytes.Buffer
	m := newTestMachine(false, false, adaptive)
	m.log = zerolog.New(&buf)
	want(t, m.signal(at(0), unix.SIGTERM), actWatchDrain{0, 15 * time.Second})
	want(t, m.tick(at(15.5)))
	wantPhase(t, m, PhaseDraining)
	want(t, m.tick(at(16)), actStopWatch{}, actSignal{toAppStop, unix.SIGTERM})
	if !strings.Contains(buf.String(), `"message":"the adaptive drain's watch did not report by its end: ending the drain"`) ||
		!strings.Contains(buf.String(), `"late":1000`) {
		t.Errorf("the backstop's end of the drain is not in the log:\n%s", buf.String())
	}
	if s := m.summary(at(17)); !strings.Contains(s, "drain ended: the watch did not report +16s") {
		t.Errorf("summary %q does not say what ended the drain", s)
	}
	// The fallback's fixed drain ends at its timer as planned: no such warning.
	buf.Reset()
	m = newTestMachine(false, false, adaptive)
	m.log = zerolog.New(&buf)
	m.signal(at(0), unix.SIGTERM)
	m.drainWatched(at(0.01), drainwatch.Result{Reason: drainwatch.ReasonUnavailable})
	want(t, m.tick(at(5)), actSignal{toAppStop, unix.SIGTERM})
	if strings.Contains(buf.String(), "did not report") {
		t.Errorf("the fallback's fixed drain is logged as a silent watch:\n%s", buf.String())
	}
}

func TestAdaptiveDrainFallsBackToFixed(t *testing.T) {
	m := newTestMachine(false, false, adaptive)
	m.signal(at(0), unix.SIGTERM)
	// /proc/net/tcp unreadable: the fixed 5 s delay, counted from the start of the drain.
	want(t, m.drainWatched(at(0.01), drainwatch.Result{Reason: drainwatch.ReasonUnavailable}))
	if !m.wake.Equal(at(5)) {
		t.Fatalf("fallback drain ends at %v, want the fixed 5s", m.wake.Sub(epoch))
	}
	want(t, m.tick(at(5)), actSignal{toAppStop, unix.SIGTERM})

	// The warning is an event of the stop sequence: it says when, as the others do.
	var buf bytes.Buffer
	m = newTestMachine(false, false, adaptive)
	m.log = zerolog.New(&buf)
	m.signal(at(1), unix.SIGTERM)
	m.drainWatched(at(1.25), drainwatch.Result{Reason: drainwatch.ReasonUnavailable})
	warned := false
	for l := range strings.SplitSeq(buf.String(), "\n") {
		if strings.Contains(l, "cannot watch") {
			warned = true
			if !strings.Contains(l, `"elapsed":250`) {
				t.Errorf("the fallback's warning does not say when it came: %s", l)
			}
		}
	}
	if !warned {
		t.Errorf("no warning about the fallback:\n%s", buf.String())
	}
}

// The fallback's fixed delay is --drain-delay at most --drain-max, which the configuration fits
// in the grace period with time for the app: the default 5 s drain delay with --drain-max 3s and
// a 6 s grace period (kill point 4 s) gave the stop signal and the SIGKILL in the same
// millisecond.
func TestAdaptiveFallbackWithinDrainMax(t *testing.T) {
	m := newTestMachine(false, false, func(c *config.Config) {
		c.Adaptive, c.DrainMax, c.GracePeriod = true, 3*time.Second, 6*time.Second
	})
	m.signal(at(0), unix.SIGTERM)
	want(t, m.drainWatched(at(0.01), drainwatch.Result{Reason: drainwatch.ReasonUnavailable}))
	if !m.wake.Equal(at(3)) {
		t.Fatalf("fallback drain ends at %v, want --drain-max's 3s (the kill point is at 4s)", m.wake.Sub(epoch))
	}
	want(t, m.tick(at(3)), actSignal{toAppStop, unix.SIGTERM})
}

// An app that listens where the watch cannot see (UDP, a UNIX socket beside its TCP port): the
// drain is the fixed delay, with one warning that names each such listener and why, and a
// summary that says so.
func TestAdaptiveDrainUnwatchableFallsBackToFixed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ls      []drainwatch.Listener
		fields  []string
		summary string
	}{
		{"udp", []drainwatch.Listener{
			{Proto: "udp", Endpoint: config.Endpoint{Addr: netip.IPv6Unspecified(), Port: 53}, PID: 7, Command: "dns", Why: "UDP: no counts"},
			{Proto: "udp", Endpoint: config.Endpoint{Addr: netip.MustParseAddr("10.0.0.5"), Port: 443}, PID: 8, Command: "quic", Why: "UDP: no counts"},
		}, []string{`"unwatchable":{"UDP: no counts":["udp [::]:53 (pid 7 dns)","udp 10.0.0.5:443 (pid 8 quic)"]}`}, "drain (fixed, serves UDP) +10ms"},
		{"unix and udp", []drainwatch.Listener{
			{Proto: "unix", Path: "/run/app.sock", PID: 7, Command: "gunicorn", Why: "a UNIX socket"},
			{Proto: "udp", Endpoint: config.Endpoint{Port: 53}, PID: 7, Command: "gunicorn", Why: "UDP"},
		}, []string{`"unwatchable":{"a UNIX socket":["unix \"/run/app.sock\" (pid 7 gunicorn)"],"UDP":["udp 53 (pid 7 gunicorn)"]}`}, "drain (fixed, UNIX socket, serves UDP) +10ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			m := newTestMachine(false, false, adaptive)
			m.log = zerolog.New(&buf)
			m.signal(at(0), unix.SIGTERM)
			want(t, m.drainWatched(at(0.01), drainwatch.Result{Reason: drainwatch.ReasonUnavailable, Unwatchable: tc.ls,
				Err: &drainwatch.UnwatchableError{Listeners: tc.ls}}))
			if !m.wake.Equal(at(5)) {
				t.Fatalf("drain ends at %v, want the fixed 5s", m.wake.Sub(epoch))
			}
			warnings := 0
			for l := range strings.SplitSeq(buf.String(), "\n") {
				if strings.Contains(l, `"level":"warn"`) {
					warnings++
					for _, w := range append(tc.fields, `"message":"the adaptive drain cannot watch all the app's listeners`, `--drain-ports`, `"drain_delay":5000`) {
						if !strings.Contains(l, w) {
							t.Errorf("the warning lacks %s: %s", w, l)
						}
					}
				}
			}
			if warnings != 1 {
				t.Errorf("%d warnings, want one:\n%s", warnings, buf.String())
			}
			want(t, m.tick(at(5)), actSignal{toAppStop, unix.SIGTERM})
			if s := m.summary(at(5.1)); !strings.Contains(s, tc.summary) {
				t.Errorf("summary %q does not say %q", s, tc.summary)
			}
		})
	}
}

// On a host with many listeners that no readable process holds, the warning still names every
// one within a log line's 4096 bytes (a pipe write, which drainit cuts to): the long reason is
// said once, not beside each listener.
func TestUnwatchableWarningKeepsEveryListener(t *testing.T) {
	why := "held by no process drainit may read; it may be held by pid 12, 13 of the app's tree, whose sockets drainit may not read (another user's, which takes CAP_SYS_PTRACE, or a process that is not dumpable: setuid, setcap)"
	var ls []drainwatch.Listener
	for port := range uint16(100) {
		ls = append(ls, drainwatch.Listener{Proto: "tcp", Endpoint: config.Endpoint{Addr: netip.IPv4Unspecified(), Port: 10000 + port}, Why: why})
	}
	ls = append(ls, drainwatch.Listener{Proto: "udp", Endpoint: config.Endpoint{Port: 53}, PID: 7, Command: "dns", Why: "UDP"})
	var buf bytes.Buffer
	m := newTestMachine(false, false, adaptive)
	m.log = zerolog.New(&buf)
	m.signal(at(0), unix.SIGTERM)
	m.drainWatched(at(0.01), drainwatch.Result{Reason: drainwatch.ReasonUnavailable, Unwatchable: ls, Err: &drainwatch.UnwatchableError{Listeners: ls}})
	var line string
	for l := range strings.SplitSeq(buf.String(), "\n") {
		if strings.Contains(l, `"level":"warn"`) {
			line = l
		}
	}
	if len(line) >= 4096 {
		t.Errorf("the warning takes %d bytes, more than a log line keeps (4096)", len(line))
	}
	var e struct{ Unwatchable map[string][]string }
	if err := json.Unmarshal([]byte(line), &e); err != nil {
		t.Fatalf("the warning %q: %v", line, err)
	}
	if got := e.Unwatchable[why]; len(got) != 100 || got[0] != "tcp 0.0.0.0:10000" || got[99] != "tcp 0.0.0.0:10099" {
		t.Errorf("the warning's listeners held by no readable process: %q, want the 100", got)
	}
	if got := e.Unwatchable["UDP"]; !slices.Equal(got, []string{"udp 53 (pid 7 dns)"}) {
		t.Errorf("the warning's UDP listeners: %q, want the one", got)
	}
}

// What the drain watches is one info line at its start: each watched listener with its owner,
// each other one with why not.
func TestAdaptiveDrainNamesListeners(t *testing.T) {
	var buf bytes.Buffer
	m := newTestMachine(false, false, adaptive)
	m.log = zerolog.New(&buf)
	m.drainWatching(at(0), drainwatch.Setup{Method: drainwatch.MethodPassiveOpens}) // not draining: nothing
	m.signal(at(0), unix.SIGTERM)
	m.drainWatching(at(0.01), drainwatch.Setup{Method: drainwatch.MethodSockDiag,
		Watched:   []drainwatch.Listener{{Proto: "tcp", Endpoint: config.Endpoint{Addr: netip.IPv4Unspecified(), Port: 8080}, PID: 7, Command: "nginx"}},
		Unwatched: []drainwatch.Listener{{Proto: "tcp", Endpoint: config.Endpoint{Addr: netip.IPv4Unspecified(), Port: 15006}, Why: "not the app's"}},
	})
	var found []string
	for l := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
		if strings.Contains(l, "listeners found") {
			found = append(found, l)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d lines naming the listeners, want 1:\n%s", len(found), buf.String())
	}
	for _, w := range []string{`"level":"info"`, `"watched":["tcp 0.0.0.0:8080 (pid 7 nginx)"]`, `"not_watched":{"not the app's":["tcp 0.0.0.0:15006"]}`, `"method":"sock-diag"`} {
		if !strings.Contains(found[0], w) {
			t.Errorf("the line lacks %s: %s", w, found[0])
		}
	}
}

func TestAdaptiveDrainBounds(t *testing.T) {
	// The maximum never runs past the kill point: grace 10 s, margin 2 s, max 15 s -> 8 s.
	m := newTestMachine(false, false, adaptive, func(c *config.Config) { c.GracePeriod = 10 * time.Second })
	want(t, m.signal(at(0), unix.SIGTERM), actWatchDrain{0, 8 * time.Second})
	if !m.wake.Equal(at(8)) {
		t.Fatalf("backstop at %v, want the kill point", m.wake.Sub(epoch))
	}
	// A watcher that never answers: the backstop ends the drain, and stops it.
	want(t, m.tick(at(8)), actStopWatch{}, actSignal{toAppStop, unix.SIGTERM})

	// --drain-min gives way to the kill point too: the watcher runs to it, rather than refusing
	// a minimum above its maximum (which would mean the fixed delay instead).
	m = newTestMachine(false, false, adaptive, func(c *config.Config) { c.GracePeriod, c.DrainMin = 10*time.Second, 12*time.Second })
	want(t, m.signal(at(0), unix.SIGTERM), actWatchDrain{8 * time.Second, 8 * time.Second})
	m = newTestMachine(false, false, adaptive, func(c *config.Config) { c.DrainMin = 3 * time.Second })
	want(t, m.signal(at(0), unix.SIGTERM), actWatchDrain{3 * time.Second, 15 * time.Second})

	// The second Ctrl-C still skips the drain; the watcher's late answer changes nothing.
	m = newTestMachine(false, false, adaptive)
	m.signal(at(0), unix.SIGINT)
	want(t, m.signal(at(1), unix.SIGINT), actStopWatch{}, actSignal{toAppStop, unix.SIGINT})
	want(t, m.drainWatched(at(2), drainwatch.Result{Reason: drainwatch.ReasonQuiet}))
	wantPhase(t, m, PhaseStopping)
}

// A stop signal after the app exited on its own, while the post-stop hooks run: there is nothing
// left to drain, but the runtime's grace period has begun, so the hooks must now end by the
// deadline (they started with none) and drainit exit before the runtime's SIGKILL.
func TestTriggerAfterTheAppExitedBoundsPostStopHooks(t *testing.T) {
	m := newTestMachine(false, true)
	m.noChildren(at(1))
	want(t, m.appExit(at(1), exited(3)), actRunHooks{config.StagePostStop, time.Time{}})
	want(t, m.signal(at(2), unix.SIGTERM), actSignal{toApp, unix.SIGTERM}, actHooksDeadline{config.StagePostStop, at(31.5)})
	wantPhase(t, m, PhasePostStop)
	// Repeated, it changes nothing; the hooks' end still ends the run with the app's status.
	want(t, m.signal(at(3), unix.SIGTERM), actSignal{toApp, unix.SIGTERM})
	want(t, m.hooksDone(at(31), config.StagePostStop, "1 cancelled"), actExit{3})
	if s := m.summaryLine; !strings.Contains(s, "(app already exited)") {
		t.Errorf("summary %q does not say the trigger came after the app's exit", s)
	}
	// Counted from the trigger, the exit a second before it is -1s, not +0s.
	if s := m.summaryLine; !strings.Contains(s, "app exited 3 -1s; post-stop hooks -1s; trigger SIGTERM (app already exited) +0s") {
		t.Errorf("summary %q does not put the app's exit before the trigger", s)
	}
}

// The same while drainit ends what the app left behind: the cleanup wait gives way to the kill
// point, and no drain or offline hook starts for an app that is gone.
func TestTriggerAfterTheAppExitedBoundsCleanup(t *testing.T) {
	m := newTestMachine(true, false, func(c *config.Config) { c.CleanupWait, c.GracePeriod = 20*time.Second, 10*time.Second })
	want(t, m.appExit(at(1), exited(0)), actSignal{toEverything, unix.SIGTERM})
	if !m.wake.Equal(at(21)) {
		t.Fatalf("cleanup ends at %v, want the cleanup wait, 21s", m.wake.Sub(epoch))
	}
	want(t, m.signal(at(2), unix.SIGTERM), actSignal{toApp, unix.SIGTERM})
	wantPhase(t, m, PhaseCleanup)
	if !m.wake.Equal(at(10)) {
		t.Fatalf("cleanup ends at %v, want the kill point 10s (2s + grace 10s - margin 2s)", m.wake.Sub(epoch))
	}
	// SIGKILL to the leftovers at the kill point; a trigger while their end is awaited starts
	// nothing either (killing sorts before cleanup among the phases).
	want(t, m.tick(at(10)), actSignal{toEverything, unix.SIGKILL})
	wantPhase(t, m, PhaseKilling)
	want(t, m.signal(at(10.5), unix.SIGINT), actSignal{toApp, unix.SIGINT})
	wantPhase(t, m, PhaseKilling)
	want(t, m.noChildren(at(10.6)), actExit{0})
}

// /prestop after the app exited on its own is answered at once: there is nothing to drain.
func TestPrestopAfterTheAppExited(t *testing.T) {
	m := newTestMachine(false, true)
	m.noChildren(at(1))
	m.appExit(at(1), exited(0))
	acts := m.prestop(at(2), false)
	if !drainedIn(acts) {
		t.Fatalf("/prestop after the app's exit was not answered at once: %#v", acts)
	}
	want(t, acts, actHooksDeadline{config.StagePostStop, at(31.5)})
}

// TestAppStatusIsFinal: a second exit reported for the app (its pid reused after the reap) changes
// nothing: not the status, not the cleanup timer, and nothing is signalled again.
func TestAppStatusIsFinal(t *testing.T) {
	m := newTestMachine(false, false)
	want(t, m.appExit(at(5), exited(42)), actSignal{toEverything, unix.SIGTERM})
	wake := m.wake
	want(t, m.appExit(at(6), exited(7)))
	if m.appStatus != 42 || !m.wake.Equal(wake) {
		t.Fatalf("status %d, cleanup timer %v after a second exit; want 42 and %v", m.appStatus, m.wake.Sub(epoch), wake.Sub(epoch))
	}
	want(t, m.noChildren(at(6.5)), actExit{42})
}

// An app killed by SIGKILL says so in the summary: the OOM killer's when the cgroup's count of
// OOM kills has grown since the app started and drainit sent no SIGKILL, else just SIGKILL (137
// is also an exit(137)). drainit's own SIGKILL is said as before, whatever the count.
func TestAppKilledBySIGKILLSaysWhose(t *testing.T) {
	for _, c := range []struct {
		name      string
		oomKills  uint64
		drainits  bool
		want, not string
	}{
		{"oom", 1, false, "app exited 137 (OOM-killed) +5s", "drainit had to SIGKILL"},
		{"someone's", 0, false, "app exited 137 (killed by SIGKILL) +5s", "OOM"},
		{"drainit's", 2, true, "app exited 137 (killed by SIGKILL) +", "OOM"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := newTestMachine(false, false)
			now := at(5)
			if c.drainits {
				m.signal(at(1), unix.SIGTERM)
				m.tick(at(6))  // the drain's end: the stop signal
				m.tick(at(29)) // the kill point: t0 + grace - kill margin
				now = at(29.1)
			}
			m.noChildren(now)
			m.oomKilled(c.oomKills)
			m.appExit(now, killedBy(unix.SIGKILL))
			s := m.summaryLine
			if !strings.Contains(s, c.want) || strings.Contains(s, c.not) {
				t.Errorf("summary %q, want %q and no %q", s, c.want, c.not)
			}
		})
	}
	// An app that exits 137 by itself is no SIGKILL.
	m := newTestMachine(false, false)
	m.noChildren(at(5))
	m.appExit(at(5), exited(137))
	if s := m.summaryLine; !strings.Contains(s, "app exited 137 +5s") {
		t.Errorf("summary %q, want app exited 137 and no more", s)
	}
}

// TestPhaseTable walks the phase table: a row per phase with a name of its own, the hooks' end a
// step only in the phase named after its stage, and the end of the other stage's hooks (cancelled,
// or not the phase's) nothing in any phase.
func TestPhaseTable(t *testing.T) {
	stages := []config.HookStage{config.StageOffline, config.StagePostStop}
	names := map[string]bool{}
	for p := PhaseRunning; p <= PhaseDone; p++ {
		row := p.spec()
		if row.name == "" || names[row.name] || p.String() != row.name {
			t.Errorf("phase %d: name %q, empty or not its own", p, row.name)
		}
		names[row.name] = true
		ownStage := slices.ContainsFunc(stages, func(st config.HookStage) bool { return st.String() == row.name })
		if ownStage != (row.onHooksDone != nil) {
			t.Errorf("%s: a step for the hooks' end %v, a hook stage of its name %v", p, row.onHooksDone != nil, ownStage)
		}
		for _, st := range stages {
			if st.String() == row.name {
				continue
			}
			m := newTestMachine(true, true)
			m.phase = p
			want(t, m.hooksDone(at(1), st, "1 ok"))
			wantPhase(t, m, p)
		}
	}
}

// The adaptive drain's watcher counts only while its drain runs: its report in any other phase,
// or in a fixed drain (the fallback after it could not watch, or --drain fixed), does nothing.
func TestWatchReportOnlyInItsDrain(t *testing.T) {
	quiet := drainwatch.Result{Reason: drainwatch.ReasonQuiet}
	for p := PhaseRunning; p <= PhaseDone; p++ {
		m := newTestMachine(false, false, adaptive)
		m.phase, m.watchEnd = p, at(10)
		if p == PhaseDraining {
			continue // TestAdaptiveDrain* cover it
		}
		want(t, m.drainWatched(at(1), quiet))
		wantPhase(t, m, p)
	}
	fixed := newTestMachine(false, false)
	fixed.signal(at(0), unix.SIGTERM)
	want(t, fixed.drainWatched(at(1), quiet))
	wantPhase(t, fixed, PhaseDraining)
	if !fixed.wake.Equal(at(5)) {
		t.Errorf("a report in a fixed drain moved its end to %v, want the fixed 5s", fixed.wake.Sub(epoch))
	}
}

// Leaving the adaptive drain before its watcher reports stops the watcher, whichever way it is
// left (Ctrl-C twice: TestAdaptiveDrainBounds; the backstop: TestAdaptiveDrainBackstopIsLogged),
// and its late report does nothing; a drain its report ended, or one that fell back to the fixed
// delay, has no watcher left to stop.
func TestLeavingTheDrainStopsItsWatcher(t *testing.T) {
	quiet := drainwatch.Result{Reason: drainwatch.ReasonQuiet}
	gone := newTestMachine(false, false, adaptive)
	gone.signal(at(0), unix.SIGTERM)
	gone.noChildren(at(1))
	want(t, gone.appExit(at(1), exited(0)), actStopWatch{}, actExit{0})
	want(t, gone.drainWatched(at(2), quiet))

	reported := newTestMachine(false, false, adaptive)
	reported.signal(at(0), unix.SIGTERM)
	want(t, reported.drainWatched(at(2), quiet), actSignal{toAppStop, unix.SIGTERM})
	fellBack := newTestMachine(false, false, adaptive)
	fellBack.signal(at(0), unix.SIGTERM)
	want(t, fellBack.drainWatched(at(1), drainwatch.Result{Reason: drainwatch.ReasonUnavailable}))
	want(t, fellBack.tick(at(5)), actSignal{toAppStop, unix.SIGTERM})
}

// TestOnlyCtrlCHurries: a repeated trigger other than SIGINT joins, whatever the count of
// Ctrl-Cs so far; the third Ctrl-C still kills.
func TestOnlyCtrlCHurries(t *testing.T) {
	m := newTestMachine(false, false)
	m.signal(at(0), unix.SIGINT)
	want(t, m.tick(at(5)), actSignal{toAppStop, unix.SIGINT})
	want(t, m.signal(at(6), unix.SIGINT)) // the second, past the drain: nothing to skip
	want(t, m.signal(at(7), unix.SIGTERM))
	want(t, m.signal(at(8), unix.SIGTERM))
	wantPhase(t, m, PhaseStopping)
	want(t, m.signal(at(9), unix.SIGINT), actSignal{toEverything, unix.SIGKILL})
	wantPhase(t, m, PhaseKilling)
}
