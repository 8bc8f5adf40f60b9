package supervisor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/hooks"
	"github.com/drainit/drainit/integration/testenv"
	"github.com/drainit/drainit/internal/config"
	"github.com/drainit/drainit/internal/control"
	"github.com/drainit/drainit/signals"
)

// The loop's tests: the real loop and machine, real channels and timers, with process control
// faked, so that the races the integration tests hit only by luck happen on purpose, without
// root.

const fakeApp = 4242 // the app's pid, as the fake reports it

// sent is one signal the loop asked for.
type sent struct {
	sig unix.Signal
	all bool // to everything, not just the app
}

// fakeProcesses records what the loop asks and reaps what the test scripted.
type fakeProcesses struct {
	mu     sync.Mutex
	sent   []sent
	exits  []exit
	none   bool
	notify chan sent // every signal, also sent here (buffered) for tests that wait for one
	// gate, when not nil, holds every signal to the app until it is closed: a loop slow to
	// signal, as under a flood.
	gate chan struct{}
	stop bool // what stopped reports: the app stopped by job control
	// forked is what workers reports: the app's forked children that catch the signal.
	forked int
}

func newFake() *fakeProcesses { return &fakeProcesses{notify: make(chan sent, 64)} }

func (f *fakeProcesses) adopt() error                      { return nil }
func (f *fakeProcesses) start([]string, bool) (int, error) { return fakeApp, nil }
func (f *fakeProcesses) signal(_ int, s unix.Signal, _, _ bool) {
	if f.gate != nil {
		<-f.gate
	}
	f.record(sent{s, false})
}
func (f *fakeProcesses) signalAll(_ int, s unix.Signal, _ bool) { f.record(sent{s, true}) }
func (f *fakeProcesses) record(s sent) {
	f.mu.Lock()
	f.sent = append(f.sent, s)
	f.mu.Unlock()
	f.notify <- s
}
func (f *fakeProcesses) stopped(int, bool, bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stop
}
func (f *fakeProcesses) survivors() []string { return nil }
func (f *fakeProcesses) workers(int, unix.Signal) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.forked
}
func (f *fakeProcesses) reap(int) (exits []exit, none bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	exits, f.exits = f.exits, nil
	return exits, f.none
}
func (f *fakeProcesses) signals() []sent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sent(nil), f.sent...)
}
func (f *fakeProcesses) exit(ws unix.WaitStatus, nothingLeft bool) {
	f.mu.Lock()
	f.exits = append(f.exits, exit{fakeApp, ws})
	f.none = nothingLeft
	f.mu.Unlock()
}

// run is one supervised run with faked processes.
type run struct {
	s          *Supervisor
	fake       *fakeProcesses
	sigs, chld chan os.Signal
	result     chan int
	log        lockedBuffer // drainit's log
}

// lockedBuffer is a log the loop writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// count is how many of the log's events have the message.
func (l *lockedBuffer) count(message string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), `"message":"`+message+`"`)
}

func newRun(t *testing.T, opts Options, edit func(*config.Config)) *run {
	t.Helper()
	c := &config.Config{
		Command: []string{"app"}, GracePeriod: 2 * time.Second, DrainDelay: 500 * time.Millisecond,
		KillMargin: 200 * time.Millisecond, CleanupWait: 200 * time.Millisecond,
		Triggers: []unix.Signal{unix.SIGTERM, unix.SIGINT}, Rewrite: signals.Rewrite{}, ExitMap: signals.ExitMap{},
	}
	if edit != nil {
		edit(c)
	}
	r := &run{fake: newFake(), sigs: make(chan os.Signal, 8), chld: make(chan os.Signal, 1), result: make(chan int, 1)}
	// pid1: no subreaper to set up, and job control stays out of the way.
	r.s = newWith(c, opts, zerolog.New(&r.log), r.sigs, r.chld, r.fake, true)
	return r
}

// start runs the supervisor; whatever was put on the channels before is there at its first select.
func (r *run) start(t *testing.T) {
	t.Helper()
	go func() {
		code, err := r.s.Run(context.Background())
		if err != nil {
			t.Errorf("Run: %v", err)
		}
		r.result <- code
	}()
}

// appExits scripts the app's exit and announces it with SIGCHLD.
func (r *run) appExits(ws unix.WaitStatus) {
	r.fake.exit(ws, true)
	r.chld <- unix.SIGCHLD
}

func (r *run) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case code := <-r.result:
		return code
	case <-time.After(within):
		t.Fatalf("the loop did not return within %s; signals sent: %v", within, r.fake.signals())
		return 0
	}
}

func (r *run) awaitSignal(t *testing.T, want sent, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case s := <-r.fake.notify:
			if s == want {
				return
			}
		case <-deadline:
			t.Fatalf("no %v within %s; signals sent: %v", want, within, r.fake.signals())
		}
	}
}

// TestLoopTriggerAndExitInSameTick: SIGTERM and the app's SIGCHLD are both waiting when the loop
// looks (select picks either first). Either way drainit exits at once with the app's status, and
// never signals the pid of an app it has reaped (the pid may be someone else's by then).
func TestLoopTriggerAndExitInSameTick(t *testing.T) {
	for range 50 {
		r := newRun(t, Options{}, nil)
		r.sigs <- unix.SIGTERM
		r.fake.exit(exited(7), true)
		r.chld <- unix.SIGCHLD
		start := time.Now()
		r.start(t)
		if code := r.wait(t, 5*time.Second); code != 7 {
			t.Fatalf("exit %d, want the app's 7", code)
		}
		if took := time.Since(start); took >= r.s.cfg.DrainDelay {
			t.Fatalf("took %s: drainit waited out the drain for an app already gone", took)
		}
		if s := r.fake.signals(); len(s) != 0 {
			t.Fatalf("signals sent after the app was reaped: %v", s)
		}
	}
}

// heldHook runs until released or until its context ends, and says when it started and how it
// ended (nil: released).
type heldHook struct {
	name    string
	started chan struct{}
	release chan struct{}
	ended   chan error
	done    atomic.Bool // it has returned
}

func newHeldHook(name string) *heldHook {
	return &heldHook{name: name, started: make(chan struct{}), release: make(chan struct{}), ended: make(chan error, 1)}
}

func (h *heldHook) Name() string { return h.name }

func (h *heldHook) Run(ctx context.Context) error {
	close(h.started)
	var err error
	select {
	case <-h.release:
	case <-ctx.Done():
		err = ctx.Err()
	}
	h.done.Store(true)
	h.ended <- err
	return err
}

// finish releases the hook, which must not have been cancelled, and waits for drainit's exit
// with the app's status code.
func (h *heldHook) finish(t *testing.T, r *run, code int) {
	t.Helper()
	close(h.release)
	if got := r.wait(t, 5*time.Second); got != code {
		t.Fatalf("exit %d, want the app's %d", got, code)
	}
	if err := <-h.ended; err != nil {
		t.Fatalf("the hook's context ended with %v, want it left to finish", err)
	}
}

// TestLoopAppExitsWhileOfflineHooksRun: the app dies while the offline hooks run. They are not
// cut short (the deregistration must land: the pod is on its way out whatever the app does),
// drainit waits for them, nothing drains or stops a dead app, and drainit exits with its status.
// They used to be cancelled.
func TestLoopAppExitsWhileOfflineHooksRun(t *testing.T) {
	h := newHeldHook("offline-test")
	// A grace period that leaves the hooks their time: their context ends config.HookOverrun before
	// the kill point.
	r := newRun(t, Options{Offline: []hooks.Hook{h}, HookTimeout: time.Minute},
		func(c *config.Config) { c.GracePeriod = time.Minute })
	r.start(t)
	r.sigs <- unix.SIGTERM
	awaitClosed(t, h.started, "the offline hook did not start after SIGTERM")
	r.appExits(exited(3))
	// drainit must still be waiting for the hook: a status request is answered by the loop while
	// it runs, and after the app's exit has been taken.
	awaitStatus(t, r, func(st control.Status) bool { return !st.Running }, "the app's exit was not taken")
	select {
	case err := <-h.ended:
		t.Fatalf("the offline hook ended (%v) when the app exited", err)
	case code := <-r.result:
		t.Fatalf("drainit exited %d while the offline hook ran", code)
	default:
	}
	h.finish(t, r, 3)
	if s := r.fake.signals(); len(s) != 0 {
		t.Errorf("signals sent to an app that had exited: %v", s)
	}
}

// TestLoopCrashRunsOfflineHooks: the app exits on its own, with no trigger. Once its probe has
// passed (it may have been registered), the offline hooks run (the deregistration a crash used
// to leave undone), then the post-stop hooks, and drainit exits with the app's status. Before
// the probe ever passed, nothing was registered, and they do not run.
func TestLoopCrashRunsOfflineHooks(t *testing.T) {
	for _, inService := range []bool{true, false} {
		t.Run(map[bool]string{true: "after the probe passed", false: "before"}[inService], func(t *testing.T) {
			p := &testenv.SwitchProbe{}
			p.Ok.Store(inService)
			off := newHeldHook("offline-test")
			post := &afterHook{before: &off.done, ran: make(chan bool, 1)}
			r := newRun(t, Options{Probe: p, ProbeEvery: 5 * time.Millisecond, Offline: []hooks.Hook{off},
				PostStop: []hooks.Hook{post}, HookTimeout: time.Minute}, nil)
			r.start(t)
			if inService {
				awaitStatus(t, r, func(st control.Status) bool { return st.Ready }, "the app never became ready")
			} else {
				// The probe fails: wait until it has been tried, so that the exit comes while the
				// app is not in service (not before the loop has even started it).
				deadline := time.Now().Add(5 * time.Second)
				for p.Checks.Load() < 2 {
					if time.Now().After(deadline) {
						t.Fatal("the probe was not tried")
					}
					time.Sleep(time.Millisecond)
				}
			}
			r.appExits(exited(9))
			if !inService {
				if code := r.wait(t, 5*time.Second); code != 9 {
					t.Fatalf("exit %d, want the app's 9", code)
				}
				select {
				case <-off.started:
					t.Fatal("the offline hooks ran for an app that was never in service")
				default:
				}
				if len(post.ran) != 1 {
					t.Fatal("the post-stop hook did not run")
				}
				return
			}
			awaitClosed(t, off.started, "the offline hook did not run after the app's exit")
			select {
			case <-post.ran:
				t.Fatal("the post-stop hook ran while the offline hook still ran")
			case code := <-r.result:
				t.Fatalf("drainit exited %d while the offline hook ran", code)
			default:
			}
			off.finish(t, r, 9)
			if after := <-post.ran; !after {
				t.Fatal("the post-stop hook ran before the offline hook had ended")
			}
			if r.log.count("the app exited on its own after it may have been put in service: running offline hooks") != 1 {
				t.Errorf("the log does not say why the offline hooks ran:\n%s", r.log.b.String())
			}
		})
	}
}

// awaitStatus waits, 5 s at most, until the loop's status satisfies ok.
func awaitStatus(t *testing.T, r *run, ok func(control.Status) bool, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err := r.s.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if ok(st) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s; log:\n%s", what, r.log.b.String())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestLoopPrestopDuringKill: a /prestop that arrives after drainit has SIGKILLed everything
// (the kubelet retrying its hook) is answered at once, drained, not left hanging; drainit still
// exits with the app's status.
func TestLoopPrestopDuringKill(t *testing.T) {
	r := newRun(t, Options{}, func(c *config.Config) {
		c.GracePeriod, c.KillMargin, c.DrainDelay = 400*time.Millisecond, 100*time.Millisecond, 50*time.Millisecond
	})
	r.start(t)
	r.sigs <- unix.SIGTERM
	r.awaitSignal(t, sent{unix.SIGTERM, false}, 5*time.Second)
	// The app ignores SIGTERM: at the kill point drainit SIGKILLs everything.
	r.awaitSignal(t, sent{unix.SIGKILL, true}, 5*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	st, err := r.s.Prestop(ctx, true, nil)
	if err != nil {
		t.Fatalf("/prestop during the kill: %v", err)
	}
	if !st.Drained || st.Phase != PhaseKilling.String() {
		t.Errorf("/prestop answered phase %q drained=%v, want killing, drained", st.Phase, st.Drained)
	}
	r.appExits(killedBy(unix.SIGKILL))
	if code := r.wait(t, 5*time.Second); code != 137 {
		t.Fatalf("exit %d, want 137 (the app's death by SIGKILL)", code)
	}
}

// TestLoopRecycledPid: after the app has been reaped its pid may be given to another process
// (a leftover's child). That process's exit is not the app's: the app's status is final, and
// drainit exits with it, once.
func TestLoopRecycledPid(t *testing.T) {
	r := newRun(t, Options{}, nil)
	r.start(t)
	r.fake.exit(exited(42), false) // leftovers still run
	r.chld <- unix.SIGCHLD
	r.awaitSignal(t, sent{unix.SIGTERM, true}, 5*time.Second) // the cleanup of the leftovers
	r.fake.exit(exited(7), false)                             // the app's pid again, reused
	r.chld <- unix.SIGCHLD
	r.fake.mu.Lock()
	r.fake.exits, r.fake.none = append(r.fake.exits, exit{fakeApp + 1, exited(0)}), true // the last leftover
	r.fake.mu.Unlock()
	r.chld <- unix.SIGCHLD
	if code := r.wait(t, 5*time.Second); code != 42 {
		t.Fatalf("exit %d, want the app's 42, not the recycled pid's status", code)
	}
	if apps, exits := r.log.count("app exited"), r.log.count("drainit exiting"); apps != 1 || exits != 1 {
		t.Errorf("%d \"app exited\" and %d \"drainit exiting\" events, want one each:\n%s", apps, exits, r.log.b.String())
	}
}

// TestLoopSignalFloodKeepsTrigger: while the loop is busy forwarding a signal (held here by the
// fake), a flood of other signals must still be taken off the channel os/signal delivers to, or
// os/signal drops what comes next, a SIGTERM among it. Each send below is what os/signal would
// have dropped had the channel been full; once the loop goes on, the SIGTERM starts the stop
// sequence.
func TestLoopSignalFloodKeepsTrigger(t *testing.T) {
	r := newRun(t, Options{}, func(c *config.Config) { c.DrainDelay = 0 })
	r.fake.gate = make(chan struct{})
	r.start(t)
	send := func(sig unix.Signal) {
		t.Helper()
		select {
		case r.sigs <- sig:
		case <-time.After(2 * time.Second):
			close(r.fake.gate)
			t.Fatalf("the signal channel stayed full while the loop forwarded a signal: os/signal would drop %s", signals.Name(sig))
		}
	}
	for range 100 {
		for _, sig := range []unix.Signal{unix.SIGUSR1, unix.SIGUSR2, unix.SIGWINCH, unix.SIGHUP} {
			send(sig)
		}
	}
	send(unix.SIGTERM)
	close(r.fake.gate)
	r.awaitSignal(t, sent{unix.SIGTERM, false}, 5*time.Second)
	r.appExits(killedBy(unix.SIGTERM))
	if code := r.wait(t, 5*time.Second); code != 128+int(unix.SIGTERM) {
		t.Fatalf("exit %d, want 143", code)
	}
	// Repeats the loop had not taken yet were coalesced: far fewer forwards than sends.
	if n := len(r.fake.signals()); n > 20 {
		t.Errorf("%d signals forwarded for 4 kinds flooded while the loop was held, want them coalesced", n)
	}
}

// TestLoopPrestopAfterAppExited: the app has exited and drainit is ending what it left behind
// when /prestop comes, and then again (the kubelet retrying, a second caller). Both are
// answered at once, drained; the second used to wait until drainit exited.
func TestLoopPrestopAfterAppExited(t *testing.T) {
	r := newRun(t, Options{}, func(c *config.Config) { c.CleanupWait = time.Minute })
	r.start(t)
	r.fake.exit(exited(3), false) // leftovers still run
	r.chld <- unix.SIGCHLD
	r.awaitSignal(t, sent{unix.SIGTERM, true}, 5*time.Second) // the cleanup has begun
	for i := 1; i <= 2; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st, err := r.s.Prestop(ctx, true, nil)
		cancel()
		if err != nil {
			t.Fatalf("/prestop #%d after the app exited: %v", i, err)
		}
		if !st.Drained || st.Running {
			t.Errorf("/prestop #%d answered drained=%v running=%v, want drained, not running", i, st.Drained, st.Running)
		}
	}
	r.fake.mu.Lock()
	r.fake.none = true
	r.fake.mu.Unlock()
	r.chld <- unix.SIGCHLD
	if code := r.wait(t, 5*time.Second); code != 3 {
		t.Fatalf("exit %d, want the app's 3", code)
	}
}

// TestLoopStopSignalResumesTheApp: the stop signal is followed by SIGCONT when the app is stopped,
// so that it shuts down gracefully rather than waiting for the SIGKILL, and only then; a forwarded
// signal resumes nothing (job control stays the user's).
func TestLoopStopSignalResumesTheApp(t *testing.T) {
	for _, stopped := range []bool{true, false} {
		r := newRun(t, Options{}, func(c *config.Config) { c.DrainDelay = 50 * time.Millisecond })
		r.fake.stop = stopped
		r.start(t)
		r.sigs <- unix.SIGUSR1
		r.awaitSignal(t, sent{unix.SIGUSR1, false}, 5*time.Second)
		r.sigs <- unix.SIGTERM
		r.awaitSignal(t, sent{unix.SIGTERM, false}, 5*time.Second)
		r.appExits(exited(0))
		if code := r.wait(t, 5*time.Second); code != 0 {
			t.Fatalf("exit %d, want the app's 0", code)
		}
		// A running app gets no SIGCONT: it would see one it has no use for.
		want := []sent{{unix.SIGUSR1, false}, {unix.SIGTERM, false}}
		if stopped {
			want = append(want, sent{unix.SIGCONT, false})
		}
		if got := r.fake.signals(); !slices.Equal(got, want) {
			t.Errorf("app stopped %v: signals sent %v, want %v", stopped, got, want)
		}
	}
}

// An app with the shape of a pre-fork master (processes.workers) is warned of as the stop
// signal goes to its group: its workers may get the signal twice. Not with --forward child, and
// not for an app without such workers.
func TestLoopWarnsOfPreForkMaster(t *testing.T) {
	const msg = "the app looks like a pre-fork master"
	for _, c := range []struct {
		forward config.Forward
		workers int
		warned  bool
	}{{config.ForwardGroup, 3, true}, {config.ForwardChild, 3, false}, {config.ForwardGroup, 0, false}} {
		r := newRun(t, Options{}, func(cfg *config.Config) { cfg.DrainDelay, cfg.Forward = 0, c.forward })
		r.fake.forked = c.workers
		r.start(t)
		r.sigs <- unix.SIGTERM
		r.awaitSignal(t, sent{unix.SIGTERM, false}, 5*time.Second)
		r.appExits(exited(0))
		r.wait(t, 5*time.Second)
		r.log.mu.Lock()
		log := r.log.b.String()
		r.log.mu.Unlock()
		if got := strings.Contains(log, `"level":"warn","workers":3,"signal":"SIGTERM"`) && strings.Contains(log, msg); got != c.warned {
			t.Errorf("--forward %v, %d workers: warned %v, want %v\n%s", c.forward, c.workers, got, c.warned, log)
		}
	}
}

// lingeringHook is an online hook that, once cancelled, runs on until released: an exec hook's
// process finishing its registration in the SIGTERM grace drainit gives it.
type lingeringHook struct {
	started, cancelled, release chan struct{}
	done                        atomic.Bool
}

func (h *lingeringHook) Name() string { return "online-test" }

func (h *lingeringHook) Run(ctx context.Context) error {
	close(h.started)
	<-ctx.Done()
	close(h.cancelled)
	<-h.release
	h.done.Store(true)
	return ctx.Err()
}

// afterHook reports, when it runs, whether an earlier hook had ended by then (its done flag).
type afterHook struct {
	before *atomic.Bool
	ran    chan bool
}

func (h *afterHook) Name() string { return "later-test" }

func (h *afterHook) Run(context.Context) error {
	h.ran <- h.before.Load()
	return nil
}

// TestLoopHookStagesInOrder: a trigger (or the app's exit) while the online hooks run cancels
// them, but a cancelled hook may still be finishing (registering the pod). The offline hooks
// (deregistering it), or the post-stop hooks, start only once it has ended, or the pod would be
// left registered.
func TestLoopHookStagesInOrder(t *testing.T) {
	for _, stage := range []string{"offline", "post-stop"} {
		t.Run(stage, func(t *testing.T) {
			on := &lingeringHook{started: make(chan struct{}), cancelled: make(chan struct{}), release: make(chan struct{})}
			later := &afterHook{before: &on.done, ran: make(chan bool, 1)}
			opts := Options{Online: []hooks.Hook{on}, HookTimeout: time.Minute}
			if stage == "offline" {
				opts.Offline = []hooks.Hook{later}
			} else {
				opts.PostStop = []hooks.Hook{later}
			}
			r := newRun(t, opts, func(c *config.Config) { c.GracePeriod = time.Minute })
			r.start(t)
			awaitClosed(t, on.started, "the online hook did not start")
			if stage == "offline" {
				r.sigs <- unix.SIGTERM
			} else {
				r.appExits(exited(5))
			}
			awaitClosed(t, on.cancelled, "the online hook was not cancelled")
			deadline := time.After(5 * time.Second)
			poll := time.NewTicker(2 * time.Millisecond)
			defer poll.Stop()
		waiting:
			for {
				select {
				case <-later.ran:
					close(on.release)
					t.Fatalf("the %s hook ran while the cancelled online hook still ran", stage)
				case <-poll.C:
					if r.log.count("waiting for the earlier hooks to end") > 0 {
						break waiting
					}
				case <-deadline:
					close(on.release)
					t.Fatalf("neither the %s hook ran nor did drainit wait for the online hook", stage)
				}
			}
			close(on.release)
			select {
			case done := <-later.ran:
				if !done {
					t.Fatalf("the %s hook ran before the online hook had ended", stage)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("the %s hook did not run once the online hook had ended", stage)
			}
			if stage == "offline" {
				r.awaitSignal(t, sent{unix.SIGTERM, false}, 5*time.Second)
				r.appExits(exited(5))
			}
			if code := r.wait(t, 5*time.Second); code != 5 {
				t.Fatalf("exit %d, want the app's 5", code)
			}
		})
	}
}

// awaitClosed waits for ch to be closed (or to give a value), failing the test with what after 5 s.
func awaitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal(what)
	}
}

// TestLoopReadinessFollowsTheProbe: once ready, the app is not ready while its probe fails (as
// the kubelet's readiness probe would say), ready when it passes again, and never again after a
// trigger, whatever the probe says then: the trigger ends the probe's watch, cutting short the
// check under way. Readiness used to be for good once the probe had passed.
func TestLoopReadinessFollowsTheProbe(t *testing.T) {
	p := &holdProbe{entered: make(chan struct{}, 1), cut: make(chan error, 1)}
	p.Ok.Store(true)
	r := newRun(t, Options{Probe: p, ProbeEvery: 5 * time.Millisecond}, func(c *config.Config) { c.GracePeriod = time.Minute })
	r.start(t)
	ready := func(want bool) {
		t.Helper()
		awaitStatus(t, r, func(st control.Status) bool { return st.Ready == want }, fmt.Sprintf("ready not %v within 5s", want))
	}
	ready(true)
	p.Ok.Store(false)
	ready(false)
	p.Ok.Store(true)
	ready(true)
	p.Ok.Store(false)
	ready(false)
	// The next check waits for its context to end: the trigger comes while it is under way, and
	// only the watch's end can end it (a watch that went on would wait in it for good).
	p.hold.Store(true)
	awaitClosed(t, p.entered, "no probe check under way within 5s")
	r.sigs <- unix.SIGTERM
	r.awaitSignal(t, sent{unix.SIGTERM, false}, 5*time.Second)
	select {
	case err := <-p.cut:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the check under way at the trigger ended by %v, want its context cancelled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the probe check under way at the trigger was not cut short within 5s: the watch goes on")
	}
	if st, _ := r.s.Status(context.Background()); st.Ready {
		t.Fatal("ready after the trigger")
	}
	n := p.Checks.Load()
	r.appExits(exited(0))
	r.wait(t, 5*time.Second)
	// The watch returns as the check it cut short does (hooks.WatchReady): no check after it.
	if got := p.Checks.Load(); got != n {
		t.Errorf("%d probe checks after the one the trigger cut short, want none", got-n)
	}
	if c := r.log.count("app ready"); c != 1 {
		t.Errorf("%d 'app ready' events, want the first readiness only", c)
	}
}

// holdProbe is a SwitchProbe whose checks, once hold is set, each say so on entered and wait
// until their context ends, then pass its error on cut (a check that sees it end was cut short:
// the watcher cancels it only after the check has returned).
type holdProbe struct {
	testenv.SwitchProbe
	hold    atomic.Bool
	entered chan struct{}
	cut     chan error
}

func (p *holdProbe) Check(ctx context.Context) error {
	if !p.hold.Load() {
		return p.SwitchProbe.Check(ctx)
	}
	p.Checks.Add(1)
	select {
	case p.entered <- struct{}{}:
	default:
	}
	<-ctx.Done()
	select {
	case p.cut <- ctx.Err():
	default:
	}
	return ctx.Err()
}

// TestLoopKubeletPrestopGone: a stop signal while the kubelet's /prestop still waits ends the
// drain (the pod's grace period is over); but once that call has given up (`drainit prestop
// --timeout`, its process killed: its connection closed), the signal that follows says nothing of
// the grace period, and the drain goes on to its end, as for any signal after a /prestop. Before,
// a call once made was taken to wait for good: the app was stopped at once, and SIGKILLed 1 s
// later with most of the pod's grace period left.
func TestLoopKubeletPrestopGone(t *testing.T) {
	for _, gone := range []bool{false, true} {
		t.Run(fmt.Sprintf("gone=%v", gone), func(t *testing.T) {
			r := newRun(t, Options{}, func(c *config.Config) { c.GracePeriod, c.DrainDelay = 30*time.Second, time.Second })
			r.start(t)
			var left atomic.Bool
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			answered := make(chan error, 1)
			go func() {
				_, err := r.s.Prestop(ctx, true, func() bool { return !left.Load() })
				answered <- err
			}()
			awaitStatus(t, r, func(st control.Status) bool { return st.Draining }, "the drain under way")
			if gone {
				left.Store(true)
				cancel()
				<-answered
			}
			sig := time.Now()
			r.sigs <- unix.SIGTERM
			r.awaitSignal(t, sent{unix.SIGTERM, false}, 5*time.Second)
			took := time.Since(sig)
			if gone && took < 700*time.Millisecond {
				t.Errorf("the app's stop signal %s after the kubelet's, with its /prestop call gone: want the drain's end", took)
			}
			if !gone && took > 500*time.Millisecond {
				t.Errorf("the app's stop signal %s after the kubelet's, its /prestop still waiting: want it at once", took)
			}
			r.appExits(exited(0))
			if code := r.wait(t, 5*time.Second); code != 0 {
				t.Fatalf("exit %d, want 0", code)
			}
		})
	}
}
