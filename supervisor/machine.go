package supervisor

import (
	"slices"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/internal/config"
	"github.com/drainit/drainit/internal/drainwatch"
	"github.com/drainit/drainit/signals"
)

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
	// actStopWatch: stop the watcher, which has not reported; what it still sends is not taken.
	actStopWatch struct{}
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
func (actStopWatch) isAction()     {}
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
	hooksRun [stageCount]bool // a stage's hooks were started and have neither ended nor been cancelled
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

// runHooks starts a stage's hooks (deadline zero: each hook's own timeout bounds them). They run
// in the phase of the stage's name, which cancels them when it is left before they end (enter).
func (m *machine) runHooks(stage config.HookStage, deadline time.Time) []action {
	m.hooksRun[stage] = true
	return []action{actRunHooks{stage, deadline}}
}

// hooksDone handles the end of a stage's hooks (each hook logs its own outcome; outcome sums
// them up for the summary): the phase's onHooksDone. Hooks that were cancelled, the sequence
// having moved on, end unheeded.
func (m *machine) hooksDone(now time.Time, stage config.HookStage, outcome string) []action {
	if stage < 0 || int(stage) >= stageCount || !m.hooksRun[stage] {
		return nil
	}
	m.hooksRun[stage] = false
	m.timeline = append(m.timeline, mark{now, stage.String() + " hooks: " + outcome})
	return m.do(m.phase.spec().onHooksDone, now)
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

// drainWatching handles the adaptive drain's watcher saying what it watches: the phase's
// onWatching, while the watcher runs.
func (m *machine) drainWatching(now time.Time, st drainwatch.Setup) {
	if onWatching := m.phase.spec().onWatching; onWatching != nil && !m.watchEnd.IsZero() {
		onWatching(m, now, st)
	}
}

// drainWatched handles the watcher's report that the drain should end: the phase's onWatched,
// while the watcher runs (the drain may have ended another way meanwhile).
func (m *machine) drainWatched(now time.Time, r drainwatch.Result) []action {
	if onWatched := m.phase.spec().onWatched; onWatched != nil && !m.watchEnd.IsZero() {
		return onWatched(m, now, r)
	}
	return nil
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
