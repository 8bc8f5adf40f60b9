package supervisor

import (
	"cmp"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/internal/config"
	"github.com/drainit/drainit/internal/drainwatch"
	"github.com/drainit/drainit/signals"
)

// Phase is where the supervisor is in the app's life.
type Phase int

// The phases, in the order the stop sequence goes through them (Phase.spec: what each input does).
const (
	PhaseRunning  Phase = iota // the app runs, its signals forwarded; no trigger yet
	PhaseOffline               // a trigger, or the app's exit: offline hooks run (an exit does not cut them short)
	PhaseDraining              // the drain, fixed or adaptive, until stopBy at most: the app still serves
	PhaseDrained               // drained after a /prestop alone: waiting for the kubelet's signal, until killAt
	PhaseStopping              // stop signal sent; waiting for the app to exit, until killAt
	PhaseCleanup               // the app has exited: SIGTERM to what it left behind, SIGKILL after the cleanup wait
	PhaseKilling               // SIGKILL sent to everything, again at each reap; waiting for the reaper
	PhasePostStop              // post-stop hooks run, until the deadline
	PhaseDone                  // drainit exits with the app's status
)

// phaseSpec is a phase's row of the stop sequence: its name, what leaving it ends of what runs in
// it (enter), and each input's step in it (nil: nothing): the first trigger (it starts the sequence
// there), the kubelet's signal after a /prestop alone (its log line to finish), Ctrl-C again (nil
// when it only joins), the app's exit, the end of the hooks of the phase's name, no child left, a
// reap that leaves some, the timer (the machine's wake), and the adaptive drain's watcher saying
// what it watches and reporting the drain's end (taken while it runs: watchEnd set).
type phaseSpec struct {
	name         string
	onLeave      func(*machine, time.Time) []action
	onTrigger    func(*machine, time.Time) []action
	onSignal     func(*machine, time.Time, *zerolog.Event) []action
	onCtrlC      func(*machine, time.Time) []action
	onAppExit    func(*machine, time.Time) []action
	onHooksDone  func(*machine, time.Time) []action
	onNoChildren func(*machine, time.Time) []action
	onReaped     func(*machine, time.Time) []action
	onWake       func(*machine, time.Time) []action
	onWatching   func(*machine, time.Time, drainwatch.Setup)
	onWatched    func(*machine, time.Time, drainwatch.Result) []action
}

// spec returns the phase's row. t0 is the first trigger; the deadline, killAt (the kill point)
// and stopBy (the latest stop signal) are the stop's budget counted from it. The offline hooks
// run once for an app that may have been in service, however it ends; what it left behind is
// ended after them (a signal to everything would reach the hooks' own processes). (A function,
// not a variable: the rows' methods log the name.)
func (p Phase) spec() phaseSpec {
	return [...]phaseSpec{
		PhaseRunning:  {name: "running", onTrigger: (*machine).enterOffline, onAppExit: (*machine).crashed},
		PhaseOffline:  {name: "offline", onLeave: (*machine).cancelOffline, onTrigger: (*machine).boundOffline, onCtrlC: (*machine).skipDrain, onHooksDone: (*machine).afterOffline, onWake: (*machine).offlineOverdue},
		PhaseDraining: {name: "draining", onLeave: (*machine).stopWatch, onCtrlC: (*machine).skipDrain, onAppExit: (*machine).endLeftovers, onWake: (*machine).drainTimer, onWatching: (*machine).logWatching, onWatched: (*machine).drainReported},
		PhaseDrained:  {name: "drained", onSignal: (*machine).stopAfterPrestop, onCtrlC: (*machine).skipDrain, onAppExit: (*machine).endLeftovers, onWake: (*machine).enterStopping},
		PhaseStopping: {name: "stopping", onSignal: (*machine).backToKillPoint, onCtrlC: (*machine).killNow, onAppExit: (*machine).endLeftovers, onWake: (*machine).enterKilling},
		PhaseCleanup:  {name: "cleanup", onTrigger: (*machine).boundCleanup, onNoChildren: (*machine).allGone, onWake: (*machine).killLeftovers},
		PhaseKilling:  {name: "killing", onAppExit: (*machine).allGone, onNoChildren: (*machine).allGone, onReaped: (*machine).killAgain, onWake: (*machine).giveUpReaping},
		PhasePostStop: {name: "post-stop", onTrigger: (*machine).boundPostStop, onHooksDone: (*machine).finish},
		PhaseDone:     {name: "done"},
	}[p]
}

// String is the phase's name, as the log and /status show it.
func (p Phase) String() string { return p.spec().name }

// enter moves the machine to phase p (the one place the phase changes): what still runs in the
// phase it leaves ends first (its onLeave).
func (m *machine) enter(now time.Time, p Phase) []action {
	var acts []action
	if p != m.phase {
		acts = m.do(m.phase.spec().onLeave, now)
	}
	m.phase = p
	return acts
}

// The table's steps, in the order of the phases they enter or act in.

func (m *machine) enterOffline(now time.Time) []action {
	if !m.hasHooks[config.StageOffline] {
		return m.enterDraining(now)
	}
	acts := m.enter(now, PhaseOffline)
	m.event(now, zerolog.InfoLevel, "offline hooks").Msg("running offline hooks")
	// The hooks may use all the time up to stopBy; the drain is then skipped, which the start-up
	// budget check warns about. The timer is a backstop: a hook's process can outlast its
	// context where nothing ends it (an exec that hangs opening its program), and the sequence
	// must not wait for it.
	m.wake = m.stopBy()
	return append(acts, m.runHooks(config.StageOffline, m.at(m.budget.HooksDeadline))...)
}

// crashed is the app's exit before any trigger. A crash leaves a registration pointing at a dead
// app (until the restarted app registers again, or for good when the pod is deleted meanwhile):
// the offline hooks take it out. No trigger has set a deadline: each hook's own timeout bounds
// them, and a trigger that comes while they run bounds them by its kill point (boundOffline).
func (m *machine) crashed(now time.Time) []action {
	if !m.inService || !m.hasHooks[config.StageOffline] {
		return m.endLeftovers(now)
	}
	acts := m.enter(now, PhaseOffline)
	m.event(now, zerolog.InfoLevel, "offline hooks (app exited)").
		Msg("the app exited on its own after it may have been put in service: running offline hooks")
	return append(acts, m.runHooks(config.StageOffline, time.Time{})...)
}

// boundOffline: the first trigger comes while the offline hooks run for the app's own exit, with
// no deadline: they must now end by the kill point, as after any trigger.
func (m *machine) boundOffline(time.Time) []action {
	m.wake = m.killAt() // the hooks' backstop (offlineOverdue)
	return []action{actHooksDeadline{config.StageOffline, m.at(m.budget.LateHooksDeadline)}}
}

// skipDrain: the second Ctrl-C skips the rest of the offline hooks and of the drain; after the
// app's exit, which leaves only the offline hooks running on, to what it left behind.
func (m *machine) skipDrain(now time.Time) []action {
	if m.sigints != 2 {
		return nil
	}
	if m.appExited {
		m.event(now, zerolog.WarnLevel, "second SIGINT").Msg("second SIGINT: skipping the rest of the offline hooks")
		return m.endLeftovers(now)
	}
	m.event(now, zerolog.WarnLevel, "second SIGINT").Msg("second SIGINT: skipping the rest of the drain")
	return m.enterStopping(now)
}

// afterOffline follows the offline hooks: the drain, or after the app's exit what it left behind.
func (m *machine) afterOffline(now time.Time) []action {
	if m.appExited {
		return m.endLeftovers(now)
	}
	return m.enterDraining(now)
}

// offlineOverdue goes on without offline hooks still running at their stage's end (enterOffline,
// boundOffline): to the drain, which then ends at once (the stop signal by stopBy), or after the
// app's exit to what it left behind. Leaving the phase cancels them.
func (m *machine) offlineOverdue(now time.Time) []action {
	m.line(now, zerolog.WarnLevel).Msg("offline hooks still running at their deadline: going on without them")
	return m.afterOffline(now)
}

// cancelOffline stops offline hooks still running as the sequence leaves their phase.
func (m *machine) cancelOffline(now time.Time) []action {
	if !m.hooksRun[config.StageOffline] {
		return nil
	}
	m.hooksRun[config.StageOffline] = false
	// Their own end is no longer waited for (hooksDone ignores it): the timeline says now.
	m.timeline = append(m.timeline, mark{now, "offline hooks: cancelled"})
	return []action{actCancelHooks{config.StageOffline}}
}

func (m *machine) enterDraining(now time.Time) []action {
	acts := m.enter(now, PhaseDraining)
	m.drainAt = now
	if !m.cfg.Adaptive {
		return append(acts, m.fixedDrain(now, m.cfg.DrainDelay, "")...)
	}
	end := earlier(now.Add(m.cfg.DrainMax), m.stopBy())
	if !end.After(now) {
		return append(acts, m.endDrain(now)...)
	}
	// The watcher reports by end; the timer one second later is only a backstop.
	m.watchEnd, m.wake = end, earlier(end.Add(time.Second), m.killAt())
	m.event(now, zerolog.InfoLevel, "drain (adaptive)").Dur("drain_max", end.Sub(now)).
		Msg("draining until no new connections arrive: the app keeps serving")
	// The kill point comes before --drain-min too when the grace period is that short: the
	// minimum gives way (a watcher told min > max would refuse to run at all).
	return append(acts, actWatchDrain{min(m.cfg.DrainMin, end.Sub(now)), end.Sub(now)})
}

// stopWatch stops the adaptive drain's watcher when the drain ends before it has reported (Ctrl-C
// twice, the app's exit, the backstop).
func (m *machine) stopWatch(time.Time) []action {
	if m.watchEnd.IsZero() {
		return nil
	}
	m.watchEnd = time.Time{}
	return []action{actStopWatch{}}
}

// drainTimer ends the drain at its timer: the fixed drain's end, or the backstop of an adaptive
// drain whose watcher has not reported, which the log must say (it would otherwise show no end).
func (m *machine) drainTimer(now time.Time) []action {
	if !m.watchEnd.IsZero() {
		m.logWatchSilent(now)
	}
	return m.endDrain(now)
}

// drainReported ends the adaptive drain on its watcher's report; where it could not watch, the
// fixed drain follows.
func (m *machine) drainReported(now time.Time, r drainwatch.Result) []action {
	m.watchEnd = time.Time{} // the watcher has ended
	if r.Reason == drainwatch.ReasonUnavailable {
		return m.fixedDrain(now, m.fallbackDelay(), m.logWatchUnavailable(now, r))
	}
	m.logDrainOver(now, r)
	return m.endDrain(now)
}

// fixedDrain waits d from the start of the drain (capped at stopBy).
func (m *machine) fixedDrain(now time.Time, d time.Duration, why string) []action {
	end := earlier(m.drainAt.Add(d), m.stopBy())
	if !end.After(now) {
		return m.endDrain(now)
	}
	m.wake = end
	m.event(now, zerolog.InfoLevel, "drain"+why).Dur("drain_delay", end.Sub(m.drainAt)).Msg("draining: the app keeps serving")
	return nil
}

// fallbackDelay is the adaptive drain's fixed delay where it cannot watch the app: --drain-delay,
// but never beyond --drain-max, which the configuration fits in the grace period with time for
// the app to stop; --drain-delay, checked only for the fixed drain, may not fit (the default 5 s
// in a 6 s grace period put the stop signal and the SIGKILL in the same millisecond).
func (m *machine) fallbackDelay() time.Duration { return min(m.cfg.DrainDelay, m.cfg.DrainMax) }

// endDrain is the end of the drain wait: the stop step, or, when only a /prestop started the
// sequence, waiting for the kubelet's signal (bounded by the kill point).
func (m *machine) endDrain(now time.Time) []action {
	acts := m.markDrained()
	if m.trigger != 0 {
		return append(acts, m.enterStopping(now)...)
	}
	acts = append(acts, m.enter(now, PhaseDrained)...)
	m.wake = m.killAt()
	m.event(now, zerolog.InfoLevel, "drained").Msg("drained; waiting for the stop signal")
	return acts
}

// msgAfterPrestop is the log line of the kubelet's signal after a /prestop.
const msgAfterPrestop = "stop signal after /prestop"

// stopAfterPrestop: the kubelet's signal has come after the drain: the stop step.
func (m *machine) stopAfterPrestop(now time.Time, e *zerolog.Event) []action {
	e.Msg(msgAfterPrestop)
	return m.enterStopping(now)
}

// preStopWaitOver handles the kubelet's stop signal arriving while its /prestop call still waits
// for the drain. The kubelet waits for a preStop hook for the pod's grace period at most, and
// signals only once the hook has answered or that wait is over: drainit had not answered, so the
// pod's grace period has run out, shorter than drainit's (`kubectl delete --grace-period`, an
// eviction, a node's shutdown, or terminationGracePeriodSeconds below --grace-period), and the
// runtime's SIGKILL follows in config.MinGraceAfterSignal. Draining on, as drainit did, let that
// SIGKILL end the app before it had its stop signal, every request in flight with it, and drainit
// before its post-stop hooks and its summary. The app gets its stop signal now and the time left is
// shared out: half of it to the app, the kill margin at most, and the rest to the post-stop hooks
// and the exit.
func (m *machine) preStopWaitOver(now time.Time, sig unix.Signal) []action {
	m.budget = m.budget.Shortened(now.Sub(m.t0), config.MinGraceAfterSignal)
	m.event(now, zerolog.WarnLevel, "signal "+signals.Name(sig)+": the pod's grace period is over").
		Str("signal", signals.Name(sig)).Dur("drained", now.Sub(m.t0)).Time("deadline", m.deadline().UTC()).
		Msg("the kubelet's stop signal came while its preStop call still waited for the drain: the pod's grace period is over, shorter than drainit's --grace-period (kubectl delete --grace-period, an eviction, a node's shutdown?), and the runtime's SIGKILL follows in 2 s; stopping the app now")
	return m.enterStopping(now)
}

func (m *machine) enterStopping(now time.Time) []action {
	acts := m.markDrained()
	m.wake = m.killAt()
	if m.trigger == 0 {
		// No signal came after /prestop: stop the app ourselves, leaving it the kill margin.
		m.wake = m.deadline()
		m.event(now, zerolog.WarnLevel, "no signal").Msg("no stop signal arrived after /prestop; stopping the app")
	}
	acts = append(acts, m.enter(now, PhaseStopping)...)
	sig, ok := m.cfg.StopSignal, true
	if sig == 0 {
		// With no signal after /prestop, drainit stops the app as the runtime's SIGTERM would
		// have: through --rewrite too, or the app would get TERM or QUIT (nginx's fast or
		// graceful stop) depending on which came first, the kubelet's SIGTERM or the kill point.
		sig, ok = m.cfg.Rewrite.Apply(cmp.Or(m.trigger, unix.SIGTERM))
	}
	if !ok {
		m.event(now, zerolog.WarnLevel, "stop").Time("kill_at", m.wake.UTC()).
			Msg("stop signal dropped by --rewrite; the app gets SIGKILL at kill_at")
		return acts
	}
	m.event(now, zerolog.InfoLevel, "stop "+signals.Name(sig)).Str("signal", signals.Name(sig)).
		Time("kill_at", m.wake.UTC()).Msg("stop signal sent")
	return append(acts, actSignal{toAppStop, sig})
}

// backToKillPoint: drainit stopped the app itself, no signal having come by the kill point, and
// gave it until the deadline as if no runtime were counting. This signal says one is: the
// runtime's preStop wait ended when the drain did, at the kill point, and its SIGKILL comes at
// the deadline, where drainit's own would race it and the post-stop hooks and the summary would
// be lost. Back to the kill point, as on every other path.
func (m *machine) backToKillPoint(_ time.Time, e *zerolog.Event) []action {
	m.wake = m.killAt()
	e.Time("kill_at", m.wake.UTC()).Msg(msgAfterPrestop)
	return nil
}

// killNow: the third Ctrl-C kills the app.
func (m *machine) killNow(now time.Time) []action {
	if m.sigints < 3 {
		return nil
	}
	m.event(now, zerolog.WarnLevel, "third SIGINT").Msg("third SIGINT: killing the app")
	return m.enterKilling(now)
}

// enterKilling is the kill point (or a third Ctrl-C) with the app still running.
func (m *machine) enterKilling(now time.Time) []action {
	acts := append(m.markDrained(), m.killEverything(now)...)
	m.event(now, zerolog.WarnLevel, "SIGKILL").Msg("app still running: SIGKILL to everything")
	return acts
}

// endLeftovers follows the app's exit, and the offline hooks that ran after it: SIGTERM to what
// the app left behind, or the post-stop hooks when it left nothing.
func (m *machine) endLeftovers(now time.Time) []action {
	if !m.hasChildren {
		return m.enterPostStop(now)
	}
	acts := m.enter(now, PhaseCleanup)
	m.wake = now.Add(m.cfg.CleanupWait)
	if !m.t0.IsZero() {
		m.wake = earlier(m.wake, m.killAt())
	}
	m.event(now, zerolog.InfoLevel, "cleanup").Msg("the app left processes behind: SIGTERM to them")
	return append(acts, actSignal{toEverything, unix.SIGTERM})
}

// boundCleanup: the first trigger comes while what the app left behind is being ended.
func (m *machine) boundCleanup(time.Time) []action {
	m.wake = earlier(m.wake, m.killAt())
	return nil
}

// killLeftovers is the end of the cleanup wait: what the app left behind survived SIGTERM.
func (m *machine) killLeftovers(now time.Time) []action {
	m.event(now, zerolog.WarnLevel, "SIGKILL leftovers").Msg("processes left behind by the app still run: SIGKILL")
	return m.killEverything(now)
}

// killEverything sends SIGKILL to everything and waits for the reaper: until the post-stop hooks'
// deadline, but reapWait at least, for when the kill comes late. What has not ended by then
// survives SIGKILL (giveUpReaping), and waiting to the deadline itself, as drainit did, put its
// exit where the runtime's SIGKILL lands (seen: an app held by a tracer, drainit exiting at
// +5.000 s of a 5 s grace period): the survivors' names and the summary could be lost.
func (m *machine) killEverything(now time.Time) []action {
	acts := m.enter(now, PhaseKilling)
	m.killed = true
	m.wake = now.Add(reapWait)
	if !m.t0.IsZero() {
		if last := m.postStopDeadline(); last.After(m.wake) {
			m.wake = last
		}
	}
	return append(acts, actSignal{toEverything, unix.SIGKILL})
}

// giveUpReaping is the end of the wait for the reaper after SIGKILL: what is left cannot end or
// cannot be collected (stuck in uninterruptible sleep, its exit held by a tracer, not drainit's
// to kill), and drainit goes on without it. The loop logs each survivor and why (actSurvivors),
// then goes on with survivorsLogged: its lines come before the post-stop hooks' processes join
// the survivors, and before "drainit exiting", the last line.
func (m *machine) giveUpReaping(now time.Time) []action {
	m.event(now, zerolog.ErrorLevel, "gave up waiting").Msg("processes survive SIGKILL; going on without them")
	if !m.appExited {
		// The app itself would not die: report it as killed.
		m.appExited, m.appStatus = true, 128+int(unix.SIGKILL)
	}
	return []action{actSurvivors{}}
}

// killAgain: while killing, what a reap leaves gets SIGKILL again. As a subreaper drainit finds its
// descendants by walking /proc, and a process that forks on and on, each parent exiting, has a
// new pid by the time the walk's SIGKILL comes: three walks missed it, and drainit gave up after
// reapWait with it still forking. Each of its exits brings drainit here, and each walk is another
// chance to catch it.
func (m *machine) killAgain(now time.Time) []action {
	m.debug(now).Msg("reaped, and processes are left: SIGKILL to everything again")
	return []action{actSignal{toEverything, unix.SIGKILL}}
}

// allGone goes on to the post-stop hooks once the app has exited and left nothing running.
func (m *machine) allGone(now time.Time) []action {
	if !m.appExited || m.hasChildren {
		return nil
	}
	return m.enterPostStop(now)
}

func (m *machine) enterPostStop(now time.Time) []action {
	acts := m.enter(now, PhasePostStop)
	m.wake = time.Time{}
	if !m.hasHooks[config.StagePostStop] {
		return append(acts, m.finish(now)...)
	}
	m.event(now, zerolog.InfoLevel, "post-stop hooks").Msg("running post-stop hooks")
	var deadline time.Time // none before a trigger: each hook's own timeout bounds it
	if !m.t0.IsZero() {
		deadline = m.postStopDeadline()
	}
	return append(acts, m.runHooks(config.StagePostStop, deadline)...)
}

// boundPostStop: the first trigger comes while the post-stop hooks run with no deadline.
func (m *machine) boundPostStop(time.Time) []action {
	return []action{actHooksDeadline{config.StagePostStop, m.postStopDeadline()}}
}

func (m *machine) finish(now time.Time) []action {
	acts := m.enter(now, PhaseDone)
	m.wake = time.Time{}
	code := m.cfg.ExitMap.Apply(m.appStatus)
	m.summaryLine = m.summary(now)
	m.line(now, zerolog.InfoLevel).Int("status", code).Str("summary", m.summaryLine).Msg("drainit exiting")
	return append(acts, actExit{code})
}
