package supervisor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/hooks"
	"github.com/drainit/drainit/internal/config"
	"github.com/drainit/drainit/internal/control"
	"github.com/drainit/drainit/internal/drainwatch"
	"github.com/drainit/drainit/internal/logline"
	"github.com/drainit/drainit/signals"
)

// Options are the parts of a run that are built outside the supervisor.
type Options struct {
	Offline     []hooks.Hook // run after a trigger, before the drain
	Online      []hooks.Hook // run once the app is ready
	PostStop    []hooks.Hook // run after the app and everything it left have exited
	HookTimeout time.Duration
	Probe       hooks.Probe // when the app is ready; nil: as soon as it has started
	// ProbeEvery paces the probe once the app is ready (0: hooks.WatchEvery); hooks.WatchFailures
	// failed attempts in a row make it not ready again.
	ProbeEvery time.Duration
	// Children routes the exits of exec hooks' processes, which the supervisor's reaper
	// collects, back to the hooks (nil: no exec hooks).
	Children *hooks.Children
	// Control, when not nil, is the listener of the control server (/prestop, /healthz, ...),
	// opened by the caller so that a bad address is reported before the app starts.
	Control      net.Listener
	ControlToken string
	// Started, when not nil, is called once the app has been started (not when it cannot be),
	// for start-up work that must not delay the app (drainit registers the rarely sent signals,
	// signals.Late, from there). It runs on the supervisor's goroutine and must not block.
	Started func()
	// OOMKills, when not nil, says how many processes the kernel's OOM killer has killed in
	// drainit's cgroup since the app started (ok false: it cannot tell); asked when the app
	// dies of SIGKILL, so that the log and the summary can say it was OOM-killed.
	OOMKills func() (n uint64, ok bool)
}

// Supervisor carries everything one run needs; there is no package-level state.
type Supervisor struct {
	cfg  *config.Config
	opts Options
	log  zerolog.Logger
	// loopLog is log for the loop's own lines, with the phase and the elapsed since t0 of the
	// machine the loop owns (stopSequenceHook); only the loop's goroutine may use it.
	loopLog zerolog.Logger
	sigs    <-chan os.Signal // every caught signal but SIGCHLD
	chld    <-chan os.Signal // SIGCHLD
	reqs    chan request
	done    chan struct{} // closed when the loop has returned
	proc    processes

	pid1       bool
	foreground bool           // the app's group has the terminal: job control is on
	accepted   func() uint64  // connections the control server accepted, and the probe made (nil: neither)
	probed     atomic.Uint64  // the probe's attempts that connected to the app
	probeTo    netip.AddrPort // where the probe connects, when that is in this network namespace
	appPid     int
	appReaped  bool                // the app's exit has been collected: appPid is no longer the app's
	history    *drainwatch.History // the traffic before the drain, for --drain-quiet auto (nil: none)
	exitBy     time.Time           // see ExitBy
	stopWarn   logline.Limiter     // the warnings that the app stopped with nothing above to resume it
}

// stageDone is a stage's hooks having all run.
type stageDone struct {
	stage   config.HookStage
	outcome hooks.Outcome
}

// New prepares a run of cfg.Command. sigs must already be registered (signal.Notify) for
// signals.Early(), before anything else happens, so that no such signal sent while drainit
// starts is lost: it is delivered to the app once the app runs (signals.Late may follow). chld
// gets SIGCHLD and nothing else; one slot is enough, as each notification reaps every child
// that has exited.
func New(cfg *config.Config, opts Options, log zerolog.Logger, sigs, chld <-chan os.Signal) *Supervisor {
	pid1 := os.Getpid() == 1
	return newWith(cfg, opts, log, sigs, chld, linuxProcesses{pid1: pid1}, pid1)
}

// newWith is New with the process control given: the loop's tests pass a fake.
func newWith(cfg *config.Config, opts Options, log zerolog.Logger, sigs, chld <-chan os.Signal, p processes, pid1 bool) *Supervisor {
	return &Supervisor{
		cfg: cfg, opts: opts, log: log, loopLog: log, sigs: sigs, chld: chld,
		reqs: make(chan request), done: make(chan struct{}), pid1: pid1, proc: p,
		stopWarn: logline.Limiter{Every: stopWarnEvery},
	}
}

// stopWarnEvery spaces the warnings that the app stopped with nothing above drainit to resume
// it: an app stopped and continued again and again would otherwise flood the log.
const stopWarnEvery = 10 * time.Second

// Run starts the app and supervises it until the app and everything it left behind are gone. It
// returns the status drainit should exit with. An error means the app could not be started; a
// *StartError carries the status for that case.
func (s *Supervisor) Run(ctx context.Context) (int, error) {
	// Orphans of the app must become our children, or nobody reaps them and the "kill
	// everything left" step cannot see them.
	if err := s.proc.adopt(); err != nil {
		s.log.Warn().Err(err).Msg("cannot become a child subreaper; orphans will not be reaped")
	}
	s.foreground = controllingTerminal()
	start := time.Now()
	pid, err := s.proc.start(s.cfg.Command, s.foreground)
	if err != nil {
		if se := (*StartError)(nil); errors.As(err, &se) {
			return se.Code, err
		}
		return 126, err
	}
	s.appPid = pid
	if s.opts.Started != nil {
		s.opts.Started()
	}
	s.log.Info().Int("pid", pid).Strs("command", s.cfg.Command).Bool("pid1", s.pid1).
		Bool("tty", s.foreground).Msg("app started")

	m := newMachine(s.cfg, len(s.opts.Offline) > 0, len(s.opts.PostStop) > 0, start, s.log)
	m.ready = s.opts.Probe == nil && len(s.opts.Online) == 0
	m.inService = m.ready
	if s.opts.Probe != nil {
		s.probeTo, _ = hooks.LocalTarget(s.opts.Probe)
		// The app accepts the probe's connections: the adaptive drain must not count them as
		// traffic (the --drain-quiet auto history, sampled while the probe goes on).
		s.opts.Probe = countingProbe{s.opts.Probe, &s.probed}
		s.accepted = s.probed.Load
	}
	if s.opts.Control != nil {
		srv := control.New(s, s.opts.ControlToken, s.cfg.GracePeriod, s.log)
		ln := &countingListener{Listener: s.opts.Control}
		s.accepted = func() uint64 { return ln.n.Load() + s.probed.Load() }
		go func() {
			if err := srv.Serve(ln); err != nil {
				s.log.Error().Err(err).Msg("control server stopped")
			}
		}()
		defer srv.Close()
		s.log.Info().Str("addr", s.opts.Control.Addr().String()).Msg("control server listening")
	}
	if s.cfg.Adaptive && s.cfg.DrainQuietAuto {
		// The automatic quiet period starts from the pod's traffic before the drain (a read of
		// /proc/net/snmp a second until a drain takes it; in a namespace shared with other
		// listeners, a sock_diag dump of the app's own too).
		hctx, stop := context.WithCancel(ctx)
		defer stop()
		s.history = drainwatch.Record(hctx, drainwatch.RecordConfig{Self: s.accepted, AppPID: s.appPid,
			Adopter: os.Getpid(), Ports: s.cfg.DrainPorts})
	}
	sigs := make(chan unix.Signal)
	go relaySignals(s.sigs, sigs, s.done)
	code := s.loop(ctx, m, sigs)
	close(s.done)
	writeTerminationLog(s.cfg.TerminationLog, m.summaryLine)
	if !m.t0.IsZero() {
		s.exitBy = m.at(m.budget.ExitBy)
	}
	return code, nil
}

// ExitBy is, once Run has returned, the time by which drainit must have exited, its last log
// lines written: shortly before the stop sequence's deadline, where the runtime's SIGKILL lands.
// Zero when no stop sequence ran (the app exited on its own and nothing stops the container).
func (s *Supervisor) ExitBy() time.Time { return s.exitBy }

// relaySignals takes every signal from in as soon as os/signal delivers it and hands it to the
// loop on out, until done is closed. os/signal drops a signal whose channel is full, and the loop
// takes one signal per turn and signals the app before it takes the next: under a flood of
// forwarded signals (a few processes sending 20 distinct ones in a loop) the channel filled and
// a SIGTERM sent meanwhile was dropped, and no stop sequence ever started. Here a signal never
// waits for the loop's work: repeats of a signal the loop has not taken yet are coalesced, as
// the kernel coalesces a pending signal, so what waits is at most one of each signal, in the
// order they first came.
func relaySignals(in <-chan os.Signal, out chan<- unix.Signal, done <-chan struct{}) {
	var queued [signals.MaxSignal + 1]bool
	var order []unix.Signal // the signals queued, oldest first: each at most once
	for {
		var send chan<- unix.Signal // nil, so never ready, while nothing waits
		var next unix.Signal
		if len(order) > 0 {
			send, next = out, order[0]
		}
		select {
		case s := <-in:
			sig, ok := s.(unix.Signal)
			if !ok || sig < 1 || sig > signals.MaxSignal || queued[sig] {
				continue
			}
			queued[sig] = true
			order = append(order, sig)
		case send <- next:
			queued[next] = false
			order = append(order[:0], order[1:]...)
		case <-done:
			return
		}
	}
}

// loop is the one goroutine that owns the machine, taking signals from sigs (relaySignals). It
// returns drainit's exit status.
func (s *Supervisor) loop(ctx context.Context, m *machine, sigs <-chan unix.Signal) int {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var armed time.Time
	hookDone := make(chan stageDone, 2)
	var cancel [stageCount]context.CancelCauseFunc // each stage's hooks' context, with why it ends
	stageHooks := [stageCount][]hooks.Hook{config.StageOffline: s.opts.Offline, config.StagePostStop: s.opts.PostStop}
	var waiters []request // /prestop calls waiting for the end of the drain
	s.loopLog = s.log.Hook(stopSequenceHook{m})

	// Readiness: the probe, then the online hooks, then the probe again and again, in the
	// background; given up once a trigger comes or the app exits.
	ready := make(chan bool)
	inService := make(chan struct{}) // the probe has passed: the online hooks are about to run
	onlineCtx, stopOnline := context.WithCancel(ctx)
	defer stopOnline()
	// lastStage is closed when the hook stage started last has ended: each stage waits for the
	// one before it (see runStage).
	online := make(chan struct{})
	lastStage, lastName := (<-chan struct{})(online), "online"
	if m.ready {
		close(online)
	} else {
		go func() {
			ok := s.becomeReady(onlineCtx, inService, ready)
			close(online)
			if ok && s.opts.Probe != nil {
				every := cmp.Or(s.opts.ProbeEvery, hooks.WatchEvery)
				hooks.WatchReady(onlineCtx, s.opts.Probe, s.log.With().Str("phase", "running").Logger(), every, hooks.WatchFailures,
					func(r bool) {
						select {
						case ready <- r:
						case <-onlineCtx.Done():
						}
					})
			}
		}()
	}

	// The adaptive drain's watcher, while one runs.
	var drainRes <-chan drainwatch.Result
	var drainSetup chan drainwatch.Setup
	stopWatch := func() {}
	defer func() { stopWatch() }()

	waitFlags := 0
	if s.foreground {
		waitFlags = unix.WUNTRACED | unix.WCONTINUED
	}
	for {
		if !m.wake.Equal(armed) {
			timer.Stop()
			if armed = m.wake; !armed.IsZero() {
				timer.Reset(time.Until(armed))
			}
		}
		var acts []action
		suspend := false // a job-control stop for drainit itself, after the actions
		select {
		case <-s.chld:
			acts = s.reaped(m, waitFlags)
		case sig := <-sigs:
			if m.kubeletWaits && !kubeletWaits(waiters) {
				m.kubeletGone(time.Now())
			}
			acts = m.signal(time.Now(), sig)
			suspend = s.suspendsOn(sig) && len(acts) > 0
		case <-timer.C:
			armed = time.Time{}
			acts = m.tick(time.Now())
		case d := <-hookDone:
			cancel[d.stage](nil)
			acts = m.hooksDone(time.Now(), d.stage, d.outcome.String())
		case <-inService:
			m.putInService()
		case r := <-ready:
			m.setReady(time.Now(), r)
		case st := <-drainSetup:
			drainSetup = nil
			m.drainWatching(time.Now(), st)
		case r, ok := <-drainRes:
			select {
			case st := <-drainSetup: // sent before the result, but select may take either first
				m.drainWatching(time.Now(), st)
			default:
			}
			drainRes, drainSetup = nil, nil
			if ok {
				acts = m.drainWatched(time.Now(), r)
			}
		case r := <-s.reqs:
			if !r.prestop {
				r.reply <- m.status(time.Now(), s.appPid)
				continue
			}
			// A caller that hung up has stopped waiting (control.watchCaller): what a client
			// calling again and again leaves behind is bounded by the calls still waiting.
			waiters = append(slices.DeleteFunc(waiters, hungUp), r)
			acts = m.prestop(time.Now(), r.kubelet)
		}
		if !m.t0.IsZero() || m.appExited {
			stopOnline()
		}
		for i := 0; i < len(acts); i++ { // an action may add the machine's next ones
			switch a := acts[i].(type) {
			case actSignal:
				s.send(a.to, a.sig)
			case actRunHooks:
				// The post-stop hooks' deadline is the last one: the runtime's SIGKILL follows it
				// closely (the budget's PostStopDeadline).
				hctx, c := context.WithCancelCause(ctx)
				cancel[a.stage] = c
				if !a.deadline.IsZero() {
					var stop context.CancelFunc
					hctx, stop = context.WithDeadlineCause(hctx, a.deadline, deadlineCause(a.stage))
					cancel[a.stage] = func(err error) { c(err); stop() }
				}
				after, afterName, ended := lastStage, lastName, make(chan struct{})
				lastStage, lastName = ended, a.stage.String()
				go func(st config.HookStage, hs []hooks.Hook, t0 time.Time) {
					o := s.runStage(hctx, st, hs, after, afterName, t0)
					close(ended)
					hookDone <- stageDone{st, o}
				}(a.stage, stageHooks[a.stage], m.t0)
			case actHooksDeadline:
				end, why := cancel[a.stage], deadlineCause(a.stage)
				t := time.AfterFunc(time.Until(a.deadline), func() { end(why) })
				defer t.Stop() // deferred in a loop, but at most once per stage: a late trigger sets t0 once
			case actCancelHooks:
				cancel[a.stage](nil)
			case actWatchDrain:
				wctx, stop := context.WithCancel(ctx)
				stopWatch = stop
				drainSetup = make(chan drainwatch.Setup, 1)
				drainRes = drainwatch.Start(wctx, drainwatch.Config{Setup: drainSetup,
					AppPID: s.appPid, Adopter: os.Getpid(), Ports: s.cfg.DrainPorts, Quiet: s.cfg.DrainQuiet, Min: a.min,
					Max: a.max, SelfAccepted: s.accepted, Auto: s.cfg.DrainQuietAuto, History: s.history, Requests: s.cfg.DrainRequests,
				})
			case actStopWatch:
				stopWatch()
				drainRes, drainSetup = nil, nil
			case actDrained:
				st := m.status(time.Now(), s.appPid)
				for _, w := range waiters {
					w.reply <- st
				}
				waiters = nil
			case actSurvivors:
				// Before the post-stop hooks' processes join them, and before the last line.
				s.loopLog.Error().Strs("survivors", s.proc.survivors()).Msg("what survives SIGKILL")
				acts = append(acts, m.survivorsLogged(time.Now())...)
			case actExit:
				if len(s.opts.PostStop) > 0 {
					// What the post-stop hooks left running (`cmd &`) would outlive drainit where
					// it is not PID 1 (as PID 1 its exit ends the namespace); all else has ended,
					// the app too (its pid may be another's now). No log line: "drainit exiting"
					// is the last.
					s.proc.signalAll(s.appPid, unix.SIGKILL, true)
				}
				return a.code
			default:
				// Only this package's types are actions; a new one must be handled above.
				s.loopLog.Error().Str("action", fmt.Sprintf("%T", a)).Msg("internal error: unhandled action")
			}
		}
		if suspend {
			s.suspend()
		}
	}
}

// deadlineCause is why a stage's hooks' context ends at its deadline. The post-stop hooks' is the
// last one, which the runtime's SIGKILL follows closely (the budget's PostStopDeadline).
func deadlineCause(st config.HookStage) error {
	if st == config.StagePostStop {
		return hooks.ErrLastDeadline
	}
	return context.DeadlineExceeded
}

// runStage runs a stage's hooks once the stage before it (after, named afterName) has ended. A
// trigger or the app's exit cancels the online hooks, but a cancelled exec hook runs on for up to
// config.HookOverrun while its processes are stopped, and an HTTP hook's request may be under way:
// an offline hook (deregister) started at once could finish before the online hook (register) it
// undoes, and leave a stopped pod registered. Post-stop hooks wait for offline hooks that the app's
// exit left running. The wait is bounded by the earlier stage's own bounds, and by ctx, which this
// stage's deadline ends.
func (s *Supervisor) runStage(ctx context.Context, st config.HookStage, hs []hooks.Hook, after <-chan struct{}, afterName string, t0 time.Time) hooks.Outcome {
	log := s.log.With().Str("phase", st.String()).Logger().Hook(elapsedHook{t0})
	select {
	case <-after:
	default:
		log.Info().Str("after", afterName).Msg("waiting for the earlier hooks to end")
		select {
		case <-after:
		case <-ctx.Done():
		}
	}
	return hooks.RunAll(ctx, log, s.opts.HookTimeout, hs)
}

// elapsedHook adds the stop sequence's elapsed, since its first trigger t0, to each line a hook
// stage logs: they are events of the stop sequence, as the machine's are. The loop hands t0 to
// the stage as it starts it; zero (post-stop hooks after the app's own exit, with no stop
// sequence) adds nothing.
type elapsedHook struct{ t0 time.Time }

// Run implements zerolog.Hook.
func (h elapsedHook) Run(e *zerolog.Event, _ zerolog.Level, _ string) {
	if !h.t0.IsZero() {
		e.Dur("elapsed", time.Since(h.t0))
	}
}

// stopSequenceHook adds the phase of the machine, and once a stop sequence has started the time
// since its t0, to each line the loop logs about it (a signal forwarded during the drain, an
// orphan reaped during the cleanup), as the machine's own events carry them. It reads the
// machine: only the loop's goroutine may log through it.
type stopSequenceHook struct{ m *machine }

// Run implements zerolog.Hook.
func (h stopSequenceHook) Run(e *zerolog.Event, _ zerolog.Level, _ string) {
	e.Str("phase", h.m.phase.String())
	if !h.m.t0.IsZero() {
		e.Dur("elapsed", time.Since(h.m.t0))
	}
}

// becomeReady waits for the ready probe, runs the online hooks, and reports on ready; it returns
// whether it did (not when ctx ended first). Before the online hooks start it reports on
// inService and waits for the loop to take it: a registration may land from then on, and an exit
// of the app's own must then run the offline hooks that undo it. The loop ends ctx in the turn
// in which it takes the app's exit, so hooks that start after that report never start unseen.
func (s *Supervisor) becomeReady(ctx context.Context, inService chan<- struct{}, ready chan<- bool) bool {
	log := s.log.With().Str("phase", "online").Logger()
	if s.opts.Probe != nil {
		if err := hooks.WaitReady(ctx, s.opts.Probe, log); err != nil {
			log.Warn().Err(err).Msg("the app never became ready")
			return false
		}
		if ours, known := drainwatch.HeldByTree(s.probeTo, os.Getpid()); s.probeTo.IsValid() && known && !ours {
			log.Warn().Str("probe", s.opts.Probe.String()).
				Msg("the ready probe passed on a port that a process drainit did not start listens on: /readyz follows that process, not the app")
		}
	}
	select {
	case inService <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	if ctx.Err() != nil {
		return false // taken after the app's exit or a trigger, which the machine ignores
	}
	hooks.RunAll(ctx, log, s.opts.HookTimeout, s.opts.Online)
	select {
	case ready <- true:
		return true
	case <-ctx.Done():
		return false
	}
}

// countingProbe counts the attempts of a probe that connected to the app.
type countingProbe struct {
	hooks.Probe
	n *atomic.Uint64
}

func (p countingProbe) Check(ctx context.Context) error {
	err := p.Probe.Check(ctx)
	if hooks.Reached(err) {
		p.n.Add(1)
	}
	return err
}

// reaped collects what SIGCHLD announced and tells the machine about the app and about there
// being no child left.
func (s *Supervisor) reaped(m *machine, waitFlags int) []action {
	exits, none := s.proc.reap(waitFlags)
	now := time.Now()
	var app *unix.WaitStatus
	for _, e := range exits {
		switch {
		case s.opts.Children != nil && s.opts.Children.Exited(e.pid, e.ws):
			// An exec hook's process: its hook has the status now.
		case e.pid != s.appPid || s.appReaped:
			// After the app has been reaped its pid is free, and a process it left behind may
			// get it again: that one's exit is an orphan's, never the app's.
			if e.ws.Exited() || e.ws.Signaled() {
				s.loopLog.Debug().Int("pid", e.pid).Int("status", signals.ExitCode(e.ws)).Msg("reaped orphan")
			}
		case e.ws.Stopped():
			s.appStopped()
		case e.ws.Exited() || e.ws.Signaled():
			app, s.appReaped = &e.ws, true
			s.appGone()
		}
	}
	var acts []action
	if none {
		acts = m.noChildren(now) // before appExit: see machine.noChildren
	}
	if app != nil {
		if app.Signaled() && app.Signal() == unix.SIGKILL && s.opts.OOMKills != nil {
			if n, ok := s.opts.OOMKills(); ok {
				m.oomKilled(n)
			}
		}
		acts = append(acts, m.appExit(now, *app)...)
	}
	if len(exits) > 0 && !none {
		acts = append(acts, m.reapedSome(now)...)
	}
	return acts
}

// send delivers a signal: toApp follows --forward (the app's group, or the app alone);
// toEverything reaches the app's group and every other process drainit can end. Once the app has
// been reaped, its pid may be given to another process: the app alone then gets nothing, and the
// app's group is reached only through what drainit knows to be its own (linuxProcesses).
//
// The stop signal (toAppStop) and the clean-up's SIGTERM (toEverything) are followed by SIGCONT
// when what they reach is stopped: an app that is stopped (Ctrl-Z under `docker run -it`, a
// debugger, SIGSTOP from someone) and handles the signal would otherwise keep it pending, and its
// graceful shutdown would never run before the SIGKILL. (Not to a running app: it would get a
// SIGCONT it may report or act on, before or after the stop signal, in no order it can rely on.)
// Forwarded signals resume nothing: job control stays the user's.
func (s *Supervisor) send(to target, sig unix.Signal) {
	if to == toAppStop && s.cfg.Forward == config.ForwardGroup && !s.appReaped {
		s.warnRelay(sig)
	}
	s.deliver(to, sig)
	if (to == toAppStop || to == toEverything) && !holdsStopped(sig) && s.proc.stopped(s.appPid, s.appReaped, to == toEverything) {
		s.deliver(to, unix.SIGCONT)
	}
}

// warnRelay warns, as the stop signal goes to the app's group, when the app has the shape of a
// pre-fork master (processes.workers): if it passes the signal on to its workers, as such masters
// do, each gets it twice. Looked at then, not at start: the workers are forked once the app runs.
func (s *Supervisor) warnRelay(sig unix.Signal) {
	if n := s.proc.workers(s.appPid, sig); n > 0 {
		s.loopLog.Warn().Int("workers", n).Str("signal", signals.Name(sig)).
			Msg("the app looks like a pre-fork master: it handles the stop signal, and so do the processes it forked that run its program in its group; " +
				"if it passes the signal on to them (gunicorn, uWSGI, unicorn, puma, nginx, php-fpm do), each gets it twice with --forward group, " +
				"and may die of the second before its requests are done (gunicorn's do): set --forward child (DRAINIT_FORWARD=child)")
	}
}

// holdsStopped reports whether sig needs no SIGCONT after it: SIGKILL ends a stopped process as
// it is, SIGCONT is one, and a stop signal would be undone by one.
func holdsStopped(sig unix.Signal) bool {
	switch sig {
	case unix.SIGKILL, unix.SIGCONT, unix.SIGSTOP, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU:
		return true
	}
	return false
}

// deliver sends one signal to a target (toAppStop as toApp).
func (s *Supervisor) deliver(to target, sig unix.Signal) {
	ev := s.loopLog.Debug().Str("signal", signals.Name(sig))
	switch {
	case to == toEverything:
		ev.Int("pgid", s.appPid).Msg("signal to everything")
		s.proc.signalAll(s.appPid, sig, s.appReaped)
	case s.cfg.Forward == config.ForwardChild && s.appReaped:
		ev.Int("pid", s.appPid).Msg("not forwarding: the app has exited")
	case s.cfg.Forward == config.ForwardChild:
		ev.Int("pid", s.appPid).Msg("forwarding signal to the app")
		s.proc.signal(s.appPid, sig, false, false)
	default:
		ev.Int("pgid", s.appPid).Msg("forwarding signal to the app's process group")
		s.proc.signal(s.appPid, sig, true, s.appReaped)
	}
}

// kubeletWaits says whether any of the kubelet's /prestop calls among waiters still waits for
// its answer (a call that cannot tell is taken to).
func kubeletWaits(waiters []request) bool {
	return slices.ContainsFunc(waiters, func(r request) bool { return r.kubelet && !hungUp(r) })
}

// hungUp says whether a /prestop's caller is known to have closed its connection.
func hungUp(r request) bool { return r.connected != nil && !r.connected() }
