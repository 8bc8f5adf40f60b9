package supervisor

import (
	"cmp"
	"slices"
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

// phaseSpec is a phase's row of the stop sequence: its name and each input's step in it (nil:
// nothing): the first trigger (it starts the sequence there), the kubelet's signal after a
// /prestop alone (its log line to finish), Ctrl-C again (nil when it only joins), the app's exit,
// the end of the hooks of the phase's name, no child left, a reap that leaves some, and the timer
// (the machine's wake).
type phaseSpec struct {
	name         string
	onTrigger    func(*machine, time.Time) []action
	onSignal     func(*machine, time.Time, *zerolog.Event) []action
	onCtrlC      func(*machine, time.Time) []action
	onAppExit    func(*machine, time.Time) []action
	onHooksDone  func(*machine, time.Time) []action
	onNoChildren func(*machine, time.Time) []action
	onReaped     func(*machine, time.Time) []action
	onWake       func(*machine, time.Time) []action
}

// spec returns the phase's row. t0 is the first trigger; the deadline, killAt (the kill point)
// and stopBy (the latest stop signal) are the stop's budget counted from it. The offline hooks
// run once for an app that may have been in service, however it ends; what it left behind is
// ended after them (a signal to everything would reach the hooks' own processes). (A function,
// not a variable: the rows' methods log the name.)
func (p Phase) spec() phaseSpec {
	return [...]phaseSpec{
		PhaseRunning:  {name: "running", onTrigger: (*machine).enterOffline, onAppExit: (*machine).crashed},
		PhaseOffline:  {name: "offline", onTrigger: (*machine).boundOffline, onCtrlC: (*machine).skipDrain, onHooksDone: (*machine).afterOffline, onWake: (*machine).offlineOverdue},
		PhaseDraining: {name: "draining", onCtrlC: (*machine).skipDrain, onAppExit: (*machine).endLeftovers, onWake: (*machine).drainTimer},
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

// stageCount sizes the per-stage arrays: config.HookStage values index them. The machine runs
// the offline and post-stop stages; the online hooks run in the loop, before any stop.
const stageCount = int(config.StagePostStop) + 1

// target is who an action's signal goes to.
type target int

const (
	toApp        target = iota // the app per --forward: its group, or it alone
	toAppStop                  // as toApp, the stop signal: SIGCONT follows (see Supervisor.send)
	toEverything               // the app's group, then every other process drainit may reap
)

// action is what the machine asks the loop to do; the loop performs a tick's actions in order.
// Only the types below are actions.
type action interface{ isAction() }

type (
	// actSignal: send sig to the app, or to everything.
	actSignal struct {
		to  target
		sig unix.Signal
	}
	// actRunHooks: run a stage's hooks with a context that ends at deadline (zero: no deadline
	// beyond each hook's own timeout). The machine has already left config.HookOverrun
	// before the time the hooks must be done by.
	actRunHooks struct {
		stage    config.HookStage
		deadline time.Time
	}
	// actHooksDeadline: a stage's hooks, started without a deadline, now have one (a trigger came
	// after the app had exited on its own); the context ends at deadline.
	actHooksDeadline struct {
		stage    config.HookStage
		deadline time.Time
	}
	actCancelHooks struct{ stage config.HookStage }
	actExit        struct{ code int }
	// actWatchDrain: start the adaptive drain's watcher, which reports through drainWatched.
	actWatchDrain struct{ min, max time.Duration }
	// actDrained: the drain is over (or can no longer happen); /prestop callers get their answer.
	actDrained struct{}
	// actSurvivors: log what survives SIGKILL, and why, once drainit gives up waiting for it;
	// then survivorsLogged.
	actSurvivors struct{}
)

func (actSignal) isAction()        {}
func (actRunHooks) isAction()      {}
func (actHooksDeadline) isAction() {}
func (actCancelHooks) isAction()   {}
func (actExit) isAction()          {}
func (actWatchDrain) isAction()    {}
func (actDrained) isAction()       {}
func (actSurvivors) isAction()     {}

// reapWait is the least time drainit waits, after SIGKILL to everything, for the reaper to see
// it all gone. SIGKILL takes effect at once except for a process in uninterruptible sleep, which
// drainit cannot help and must not hang on.
const reapWait = time.Second

// machine is the stop sequence as a pure state machine: every input carries the time it
// happened, every output is a list of actions, and it never sleeps, reads a clock or touches a
// process. The supervisor loop owns it; tests drive it with made-up times.
type machine struct {
	cfg      *config.Config // the run's configuration, which nothing changes
	budget   config.Budget  // the stop's instants, since t0
	hasHooks [stageCount]bool
	log      zerolog.Logger

	phase        Phase
	start        time.Time   // the app's start
	t0           time.Time   // the first trigger; zero before it
	trigger      unix.Signal // 0 while only a /prestop has started the sequence
	drained      bool
	kubeletWaits bool      // the kubelet's /prestop call waits for the drain (preStopWaitOver)
	drainAt      time.Time // the drain wait began
	watchEnd     time.Time // the adaptive drain's watcher reports by then; zero when none watches
	sigints      int       // SIGINTs since t0: the second skips the drain, the third kills
	wake         time.Time // when the loop should call tick next; zero: no timer

	ready       bool   // the app is ready (probe passed, online hooks done) and its probe still passes
	wasReady    bool   // ready has been true
	inService   bool   // the app may have been put in service: ready from its start, or its probe passed (the online hooks register it from then on)
	summaryLine string // the one-line timeline, once done
	appExited   bool
	appStatus   int // shell-style: code, or 128+N
	hasChildren bool
	killed      bool   // drainit sent SIGKILL
	oomKills    uint64 // the OOM killer's kills in drainit's cgroup since the app started (oomKilled)
	timeline    []mark
}

// mark is one entry of the timeline: what happened, and when.
type mark struct {
	at   time.Time
	what string
}

func newMachine(c *config.Config, hasOffline, hasPostStop bool, start time.Time, log zerolog.Logger) *machine {
	return &machine{
		cfg:         c,
		budget:      c.Budget(),
		hasHooks:    [stageCount]bool{config.StageOffline: hasOffline, config.StagePostStop: hasPostStop},
		log:         log,
		start:       start,
		hasChildren: true,
	}
}

// signal handles a signal drainit received. A trigger's step is its phase's: the first one's
// onTrigger, the kubelet's after a /prestop alone onSignal, a Ctrl-C pressed again onCtrlC.
func (m *machine) signal(now time.Time, sig unix.Signal) []action {
	var acts []action
	trigger := slices.Contains(m.cfg.Triggers, sig)
	if m.appExited || !trigger {
		// Once the app is gone, forwarding still reaches what it left behind, which is being ended.
		acts = m.forwardSig(now, sig)
	}
	if !trigger {
		return acts
	}
	if sig == unix.SIGINT {
		m.sigints++ // the first Ctrl-C may follow another trigger, or a /prestop
	}
	switch {
	case m.t0.IsZero():
		return append(acts, m.startSequence(now, sig)...)
	case m.trigger == 0 && !m.appExited:
		return m.afterPrestop(now, sig)
	}
	// A repeated trigger joins the sequence under way; only Ctrl-C pressed again means "faster".
	if sig == unix.SIGINT {
		if hurried := m.do(m.phase.spec().onCtrlC, now); hurried != nil {
			return append(acts, hurried...)
		}
	}
	if !m.appExited {
		m.debug(now).Str("signal", signals.Name(sig)).Msg("trigger repeated; joining the stop sequence under way")
	}
	return acts
}

// prestop handles a /prestop request: it starts the sequence (t0 = now) or joins the one under way.
// The caller's answer is due at the next actDrained, or at once when drained is already true.
// kubelet says the caller is the kubelet's preStop hook (see preStopWaitOver).
func (m *machine) prestop(now time.Time, kubelet bool) []action {
	if kubelet && !m.drained && !m.appExited {
		m.kubeletWaits = true
	}
	switch {
	case m.drained:
		// A retry, or a second caller: the drain is over (drained comes only after a trigger),
		// whether the app still runs or not, and the answer is due at once.
		return []action{actDrained{}}
	case m.t0.IsZero():
		return m.startSequence(now, 0)
	}
	return nil
}

// startSequence starts the stop sequence at now (t0) for the trigger sig (0: a /prestop alone).
// What follows is the phase's onTrigger: the offline hooks for a running app; after the app's own
// exit there is nothing to drain, but the runtime's grace period has begun, and what still runs
// must end by the kill point, as had the trigger come first.
func (m *machine) startSequence(now time.Time, sig unix.Signal) []action {
	m.t0, m.trigger = now, sig
	var acts []action
	if m.appExited {
		acts = m.markDrained()
	}
	m.logStart(now, sig)
	return append(acts, m.do(m.phase.spec().onTrigger, now)...)
}

// afterPrestop handles the kubelet's signal after a /prestop alone: the drain has happened (or is
// happening) already; the stop step follows as soon as it is over.
func (m *machine) afterPrestop(now time.Time, sig unix.Signal) []action {
	m.trigger = sig
	if !m.drained && m.kubeletWaits {
		return m.preStopWaitOver(now, sig)
	}
	e := m.event(now, zerolog.InfoLevel, "signal "+signals.Name(sig)).Str("signal", signals.Name(sig))
	if onSignal := m.phase.spec().onSignal; onSignal != nil {
		return onSignal(m, now, e)
	}
	e.Msg(msgAfterPrestop)
	return nil
}

// appExit handles the reaper's report that the app itself has exited: the phase's onAppExit.
func (m *machine) appExit(now time.Time, ws unix.WaitStatus) []action {
	if m.appExited {
		// The app's status is final once known (or once drainit gave up on it): nothing may
		// change it, restart the cleanup or signal everything again.
		return nil
	}
	m.appExited = true
	m.appStatus = signals.ExitCode(ws)
	var acts []action
	if !m.t0.IsZero() {
		acts = m.markDrained() // no app left to drain
	}
	m.logAppExit(now, ws)
	return append(acts, m.do(m.phase.spec().onAppExit, now)...)
}

// noChildren handles the reaper's report that drainit has no child left at all: the phase's
// onNoChildren. When one reap both collects the app and finds no other child, the loop calls
// noChildren first, so that appExit goes straight to the post-stop hooks instead of hunting for
// leftovers that do not exist.
func (m *machine) noChildren(now time.Time) []action {
	m.hasChildren = false
	return m.do(m.phase.spec().onNoChildren, now)
}

// hooksDone handles the end of a stage's hooks (each hook logs its own outcome; outcome sums
// them up for the summary): the phase's onHooksDone. A stage's hooks run exactly while the machine
// is in the phase of the stage's name (each is entered once); at another phase's, they were
// cancelled and the sequence has moved on.
func (m *machine) hooksDone(now time.Time, stage config.HookStage, outcome string) []action {
	onHooksDone := m.phase.spec().onHooksDone
	if onHooksDone == nil || stage.String() != m.phase.String() {
		return nil
	}
	m.timeline = append(m.timeline, mark{now, stage.String() + " hooks: " + outcome})
	return onHooksDone(m, now)
}

// tick handles the timer the machine asked for with wake: the phase's onWake in the table.
func (m *machine) tick(now time.Time) []action {
	if m.wake.IsZero() || now.Before(m.wake) {
		return nil
	}
	m.wake = time.Time{}
	return m.do(m.phase.spec().onWake, now)
}

// do is the step an input takes in the phase's row; nil does nothing.
func (m *machine) do(step func(*machine, time.Time) []action, now time.Time) []action {
	if step == nil {
		return nil
	}
	return step(m, now)
}

// drainWatched handles the adaptive drain's watcher reporting that the drain should end: when
// it could not watch, the fixed drain follows.
func (m *machine) drainWatched(now time.Time, r drainwatch.Result) []action {
	if m.phase != PhaseDraining || !m.cfg.Adaptive {
		return nil // the drain already ended another way
	}
	if r.Reason == drainwatch.ReasonUnavailable {
		return m.fixedDrain(now, m.fallbackDelay(), m.logWatchUnavailable(now, r))
	}
	m.logDrainOver(now, r)
	return m.endDrain(now)
}

// reapedSome handles the reaper's collecting exits while children remain: the phase's onReaped.
func (m *machine) reapedSome(now time.Time) []action { return m.do(m.phase.spec().onReaped, now) }

// survivorsLogged goes on after giveUpReaping, once the loop has logged the survivors.
func (m *machine) survivorsLogged(now time.Time) []action { return m.enterPostStop(now) }

// kubeletGone records that the kubelet's /prestop calls, the drain not over, wait no longer:
// each gave up (`drainit prestop --timeout`) or went with its caller (an exec hook killed, a
// kubelet restarting), and the kubelet then signals with the grace period left, which may be
// most of it. A signal that follows says nothing of the grace period (preStopWaitOver): the
// drain goes on. A call that comes later waits again.
func (m *machine) kubeletGone(now time.Time) {
	m.kubeletWaits = false
	m.debug(now).Msg("the kubelet's /prestop calls have given up waiting for the drain: a stop signal now does not say that the pod's grace period is over")
}

// putInService records that the app may be put in service from now on (its probe has passed and
// the online hooks are about to run), so that an exit of its own runs the offline hooks.
func (m *machine) putInService() {
	if m.t0.IsZero() && !m.appExited {
		m.inService = true
	}
}

// setReady records that the app is ready (probe passed, online hooks done) or, once it was, that
// its probe has stopped passing or passes again; nothing changes once the app is on its way out.
// Only the first readiness is an event of the timeline: a flapping probe must not grow it.
func (m *machine) setReady(now time.Time, ready bool) {
	if !m.t0.IsZero() || m.appExited || ready == m.ready {
		return
	}
	m.ready = ready
	if ready && !m.wasReady {
		m.wasReady = true
		m.event(now, zerolog.InfoLevel, "ready").Msg("app ready")
	}
}

// oomKilled records, before appExit, that the kernel's OOM killer has killed n processes in
// drainit's cgroup since the app started: a SIGKILL that ends the app, and that drainit did not
// send, is then taken for the OOM killer's.
func (m *machine) oomKilled(n uint64) { m.oomKills = n }

// at is the instant d after t0: one of the budget's.
func (m *machine) at(d time.Duration) time.Time { return m.t0.Add(d) }

// deadline is where the runtime's SIGKILL lands; killAt is the kill point, where drainit SIGKILLs
// whatever still runs so that the runtime's never has to; stopBy is the latest stop signal;
// postStopDeadline ends the post-stop hooks' context.
func (m *machine) deadline() time.Time         { return m.at(m.budget.Deadline) }
func (m *machine) killAt() time.Time           { return m.at(m.budget.KillAt) }
func (m *machine) stopBy() time.Time           { return m.at(m.budget.StopBy) }
func (m *machine) postStopDeadline() time.Time { return m.at(m.budget.PostStopDeadline) }

// earlier returns the earlier of t and bound: a time capped at the kill point or at stopBy.
func earlier(t, bound time.Time) time.Time {
	if t.After(bound) {
		return bound
	}
	return t
}

// markDrained ends the drain for the /prestop callers, once.
func (m *machine) markDrained() []action {
	if m.drained {
		return nil
	}
	m.drained = true
	return []action{actDrained{}}
}

func (m *machine) forwardSig(now time.Time, sig unix.Signal) []action {
	out, ok := m.cfg.Rewrite.Apply(sig)
	if !ok {
		m.debug(now).Str("signal", signals.Name(sig)).Msg("signal dropped by --rewrite")
		return nil
	}
	return []action{actSignal{toApp, out}}
}

// The table's steps, in the order of the phases they enter or act in.

func (m *machine) enterOffline(now time.Time) []action {
	m.phase = PhaseOffline
	if !m.hasHooks[config.StageOffline] {
		return m.enterDraining(now)
	}
	m.event(now, zerolog.InfoLevel, "offline hooks").Msg("running offline hooks")
	// The hooks may use all the time up to stopBy; the drain is then skipped, which the start-up
	// budget check warns about. The timer is a backstop: a hook's process can outlast its
	// context where nothing ends it (an exec that hangs opening its program), and the sequence
	// must not wait for it.
	m.wake = m.stopBy()
	return []action{actRunHooks{config.StageOffline, m.at(m.budget.HooksDeadline)}}
}

// crashed is the app's exit before any trigger. A crash leaves a registration pointing at a dead
// app (until the restarted app registers again, or for good when the pod is deleted meanwhile):
// the offline hooks take it out. No trigger has set a deadline: each hook's own timeout bounds
// them, and a trigger that comes while they run bounds them by its kill point (boundOffline).
func (m *machine) crashed(now time.Time) []action {
	if !m.inService || !m.hasHooks[config.StageOffline] {
		return m.endLeftovers(now)
	}
	m.phase = PhaseOffline
	m.event(now, zerolog.InfoLevel, "offline hooks (app exited)").
		Msg("the app exited on its own after it may have been put in service: running offline hooks")
	return []action{actRunHooks{config.StageOffline, time.Time{}}}
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
		return append(m.cancelOffline(now), m.endLeftovers(now)...)
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
// app's exit to what it left behind.
func (m *machine) offlineOverdue(now time.Time) []action {
	m.line(now, zerolog.WarnLevel).Msg("offline hooks still running at their deadline: going on without them")
	return append(m.cancelOffline(now), m.afterOffline(now)...)
}

// cancelOffline stops offline hooks still running, when the sequence moves past them.
func (m *machine) cancelOffline(now time.Time) []action {
	if m.phase != PhaseOffline {
		return nil
	}
	// Their own end is no longer waited for (hooksDone ignores it): the timeline says now.
	m.timeline = append(m.timeline, mark{now, "offline hooks: cancelled"})
	return []action{actCancelHooks{config.StageOffline}}
}

func (m *machine) enterDraining(now time.Time) []action {
	m.phase = PhaseDraining
	m.drainAt = now
	if !m.cfg.Adaptive {
		return m.fixedDrain(now, m.cfg.DrainDelay, "")
	}
	end := earlier(now.Add(m.cfg.DrainMax), m.stopBy())
	if !end.After(now) {
		return m.endDrain(now)
	}
	// The watcher reports by end; the timer one second later is only a backstop.
	m.watchEnd, m.wake = end, earlier(end.Add(time.Second), m.killAt())
	m.event(now, zerolog.InfoLevel, "drain (adaptive)").Dur("drain_max", end.Sub(now)).
		Msg("draining until no new connections arrive: the app keeps serving")
	// The kill point comes before --drain-min too when the grace period is that short: the
	// minimum gives way (a watcher told min > max would refuse to run at all).
	return []action{actWatchDrain{min(m.cfg.DrainMin, end.Sub(now)), end.Sub(now)}}
}

// drainTimer ends the drain at its timer: the fixed drain's end, or the backstop of an adaptive
// drain whose watcher has not reported, which the log must say (it would otherwise show no end).
func (m *machine) drainTimer(now time.Time) []action {
	if !m.watchEnd.IsZero() {
		m.logWatchSilent(now)
	}
	return m.endDrain(now)
}

// fixedDrain waits d from the start of the drain (capped at stopBy).
func (m *machine) fixedDrain(now time.Time, d time.Duration, why string) []action {
	m.watchEnd = time.Time{}
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
	m.phase = PhaseDrained
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
// runtime's SIGKILL follows in config.MinGraceAfterSignal. Draining on, as drainit did, let that SIGKILL
// end the app before it had its stop signal, every request in flight with it, and drainit before
// its post-stop hooks and its summary. The app gets its stop signal now and the time left is
// shared out: half of it to the app, the kill margin at most, and the rest to the post-stop
// hooks and the exit.
func (m *machine) preStopWaitOver(now time.Time, sig unix.Signal) []action {
	m.budget = m.budget.Shortened(now.Sub(m.t0), config.MinGraceAfterSignal)
	m.event(now, zerolog.WarnLevel, "signal "+signals.Name(sig)+": the pod's grace period is over").
		Str("signal", signals.Name(sig)).Dur("drained", now.Sub(m.t0)).Time("deadline", m.deadline().UTC()).
		Msg("the kubelet's stop signal came while its preStop call still waited for the drain: the pod's grace period is over, shorter than drainit's --grace-period (kubectl delete --grace-period, an eviction, a node's shutdown?), and the runtime's SIGKILL follows in 2 s; stopping the app now")
	return m.enterStopping(now)
}

func (m *machine) enterStopping(now time.Time) []action {
	acts := append(m.cancelOffline(now), m.markDrained()...)
	m.wake = m.killAt()
	if m.trigger == 0 {
		// No signal came after /prestop: stop the app ourselves, leaving it the kill margin.
		m.wake = m.deadline()
		m.event(now, zerolog.WarnLevel, "no signal").Msg("no stop signal arrived after /prestop; stopping the app")
	}
	m.phase = PhaseStopping
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
	acts := append(m.cancelOffline(now), m.markDrained()...)
	acts = append(acts, m.killEverything(now)...)
	m.event(now, zerolog.WarnLevel, "SIGKILL").Msg("app still running: SIGKILL to everything")
	return acts
}

// endLeftovers follows the app's exit, and the offline hooks that ran after it: SIGTERM to what
// the app left behind, or the post-stop hooks when it left nothing.
func (m *machine) endLeftovers(now time.Time) []action {
	if !m.hasChildren {
		return m.enterPostStop(now)
	}
	m.phase = PhaseCleanup
	m.wake = now.Add(m.cfg.CleanupWait)
	if !m.t0.IsZero() {
		m.wake = earlier(m.wake, m.killAt())
	}
	m.event(now, zerolog.InfoLevel, "cleanup").Msg("the app left processes behind: SIGTERM to them")
	return []action{actSignal{toEverything, unix.SIGTERM}}
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
	m.phase = PhaseKilling
	m.killed = true
	m.wake = now.Add(reapWait)
	if !m.t0.IsZero() {
		if last := m.postStopDeadline(); last.After(m.wake) {
			m.wake = last
		}
	}
	return []action{actSignal{toEverything, unix.SIGKILL}}
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
	m.phase = PhasePostStop
	m.wake = time.Time{}
	if !m.hasHooks[config.StagePostStop] {
		return m.finish(now)
	}
	m.event(now, zerolog.InfoLevel, "post-stop hooks").Msg("running post-stop hooks")
	var deadline time.Time // none before a trigger: each hook's own timeout bounds it
	if !m.t0.IsZero() {
		deadline = m.postStopDeadline()
	}
	return []action{actRunHooks{config.StagePostStop, deadline}}
}

// boundPostStop: the first trigger comes while the post-stop hooks run with no deadline.
func (m *machine) boundPostStop(time.Time) []action {
	return []action{actHooksDeadline{config.StagePostStop, m.postStopDeadline()}}
}

func (m *machine) finish(now time.Time) []action {
	m.phase = PhaseDone
	m.wake = time.Time{}
	code := m.cfg.ExitMap.Apply(m.appStatus)
	m.summaryLine = m.summary(now)
	m.line(now, zerolog.InfoLevel).Int("status", code).Str("summary", m.summaryLine).Msg("drainit exiting")
	return []action{actExit{code}}
}
