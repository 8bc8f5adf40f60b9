//go:build linux

// Package early registers drainit's signals while the program initialises: before main, and
// before most of the packages drainit imports are initialised (zerolog, net, the
// configuration), so that a signal sent in drainit's first milliseconds finds drainit listening.
//
// Only cmd/drainit imports it: importing it changes how the process handles signals. The run
// subcommand takes the registration (Take); the other subcommands give it back (Release). The
// rest of what drainit does to its own dispositions is here too: the ignores it inherited and
// keeps for the app (InheritedIgnored), the discard of the signals Go cannot catch
// (DiscardUncatchable), and dying by a signal (DieBy).
//
// Until the registration, a stop signal finds drainit's entry point (internal/startsig): before
// the Go runtime's handlers it notes the signal, which this package sends again once registered
// (startsig.Caught); after, for HUP, INT and TERM, it writes one line and exits 128+N, the app not
// started, and QUIT gets the runtime's goroutine dump and exit 2. A binary linked without the
// entry point has neither: the signal is lost or ends drainit (docs/design.md, "A signal in
// drainit's first millisecond").
//
// Go initialises the packages in import-path order as their imports become ready, and this
// package needs only os/signal, the signals package and what they import, so it comes before
// the heavy ones.
//
// # Four signals here, the rest on a goroutine of its own while drainit starts
//
// Each signal.Notify of a signal not yet caught is a round trip between two threads through the
// runtime's signal-mask thread, and during package initialisation, with the main goroutine
// locked to the main thread, each hands the processor over once more: registering every early
// signal here held back the whole of drainit's start. So the initialisation registers TERM, INT,
// HUP and QUIT first, in that order, and in the same call the faults a kill can send: the
// runtime's handler is on them already, so they need no round trip. A goroutine registers the
// rest of signals.Early and CHLD, and the run subcommand waits for it (Registration.Wait) just
// before it starts the app; on the pinned start's one P (internal/startsig) it runs when the main
// goroutine waits, in practice in Wait. Unregistered meanwhile, only STKFLT and ABRT of those
// would end drainit, and TSTP, TTIN and TTOU stop one that is not PID 1, as they always could.
// Registering all of them from that goroutine starts drainit sooner, but the goroutine itself
// starts late, and TERM's window grows by as much (bench/STARTUP.md has the measurements).
package early

import (
	"os"
	"os/signal"
	"slices"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/internal/startsig"
	"github.com/drainit/drainit/signals"
)

// Registration is what drainit registered for its signals.
type Registration struct {
	// Chld has a channel of its own, of one: a reap collects every child that has exited by
	// then, and a storm of exiting orphans can never crowd a SIGTERM out of the channel the
	// other signals wait in (docs/design.md, "Signals").
	Chld chan os.Signal
	// Sigs has room for two of each signal. The runtime coalesces repeats of a signal only
	// until os/signal has delivered it, and drops one that finds the channel full: the room is
	// for what arrives before the supervisor runs, which from then on takes each signal off the
	// channel as it comes (supervisor.relaySignals). signals.Early are registered for it;
	// signals.Late are for the run subcommand to add (see there for why they wait).
	Sigs chan os.Signal
	// Ignored are the signals that were ignored when drainit started (InheritedIgnored):
	// they are not registered and stay ignored, so that the app inherits them ignored as exec
	// would have it.
	Ignored []unix.Signal
	// Lost are the other signals ignored when drainit started, which the app gets at their
	// default (InheritedIgnored), for the log.
	Lost []unix.Signal
	// AllSeen is whether drainit could see every ignored signal (its own entry point ran) or
	// only HUP, INT, TSTP, TTIN and TTOU, for the log.
	AllSeen bool
	// Err is the failure to set up the uncatchable signals (DiscardUncatchable), for the
	// log.
	Err error

	done chan struct{} // closed once every signal above is registered
}

var (
	mu    sync.Mutex
	first = start() // at package initialisation: the point of the package
	taken bool
)

// ending are the signals registered during this package's initialisation itself, first: those
// whose default effect would end drainit and that are sent to end a container or a job (TERM,
// INT, QUIT: a STOPSIGNAL; HUP: a closed terminal), then the faults (see the package doc).
var ending = append([]os.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT}, signals.Faults()...)

// start registers ending and starts the goroutine that registers the rest (see the package doc);
// the registration is complete once done is closed.
func start() *Registration {
	r := &Registration{done: make(chan struct{})}
	now, rest := splitEnding(r.prepare())
	// os/signal marks a signal wanted, after which the runtime queues it instead of acting on
	// it, before its round trip, and takes the signals of one call one after the other: TERM's
	// window ends with the call, INT's after TERM's round trip, and so on.
	if len(now) > 0 { // Notify of no signal at all would relay every signal
		signal.Notify(r.Sigs, now...)
	}
	// A stop signal that came before the runtime's handlers, which drainit's entry point
	// caught (internal/startsig): registered now, it is sent again to be taken as any other.
	for _, s := range startsig.Caught() {
		_ = unix.Kill(os.Getpid(), s)
	}
	go func() {
		r.notifyRest(rest)
		close(r.done)
	}()
	return r
}

// splitEnding splits sigs into the ending ones, in ending's order, and the others.
func splitEnding(sigs []os.Signal) (now, rest []os.Signal) {
	for _, s := range ending {
		if slices.Contains(sigs, s) {
			now = append(now, s)
		}
	}
	for _, s := range sigs {
		if !slices.Contains(ending, s) {
			rest = append(rest, s)
		}
	}
	return now, rest
}

// register registers every early signal at once, on the calling goroutine.
func register() *Registration {
	r := &Registration{done: make(chan struct{})}
	r.notifyRest(r.prepare())
	close(r.done)
	return r
}

// prepare reads the inherited dispositions, ignores what must stay ignored and makes the
// channels; it returns the early signals to register.
func (r *Registration) prepare() []os.Signal {
	r.Ignored, r.Lost, r.AllSeen = InheritedIgnored()
	// The signals Go cannot catch would otherwise end drainit at their default action.
	r.Err = DiscardUncatchable()
	r.Sigs = make(chan os.Signal, 2*signals.MaxSignal)
	r.Chld = make(chan os.Signal, 1)
	early := signals.Early()
	if len(r.Ignored) > 0 {
		early = r.notIgnored(early)
		// The runtime has its own handler on most of them by now (only HUP and INT are marked
		// ignored already): SIG_IGN again, which the runtime leaves in place in the app's fork
		// and exec keeps. One system call each, no round trip.
		for _, s := range r.Ignored {
			signal.Ignore(s)
		}
	}
	return early
}

// notifyRest registers sigs for Sigs and CHLD for Chld.
func (r *Registration) notifyRest(sigs []os.Signal) {
	if len(sigs) > 0 {
		signal.Notify(r.Sigs, sigs...)
	}
	signal.Notify(r.Chld, unix.SIGCHLD)
}

// Register registers sigs too, but for the ignored ones: the run subcommand's triggers that are
// not early (--triggers PWR, --stop-signal RTMIN+3), before the app starts, so that no stop
// request sent once the app is up is dropped (one sent earlier, while drainit reads its
// configuration, still is). Registering a signal already registered costs nothing.
func (r *Registration) Register(sigs []unix.Signal) {
	var add []os.Signal
	for _, s := range sigs {
		add = append(add, s)
	}
	if add = r.notIgnored(add); len(add) > 0 {
		signal.Notify(r.Sigs, add...)
	}
}

// Late lists signals.Late but for the ignored ones, for the run subcommand to register: a
// Notify would undo the Ignore.
func (r *Registration) Late() []os.Signal {
	return r.notIgnored(signals.Late())
}

func (r *Registration) notIgnored(sigs []os.Signal) []os.Signal {
	return slices.DeleteFunc(sigs, func(s os.Signal) bool { return slices.Contains(r.Ignored, s.(unix.Signal)) })
}

// Take returns the registration made as drainit started, with whatever has arrived since. Its
// fields are set, but part of its signals may still be being registered: Wait for them before
// starting the app. A second call (tests run the run subcommand more than once) registers anew.
func Take() *Registration {
	mu.Lock()
	defer mu.Unlock()
	if !taken {
		taken = true
		return first
	}
	return register()
}

// Wait returns once every early signal and CHLD is registered. The run subcommand calls it
// just before it starts the app, so that the registration overlaps the rest of drainit's start.
func (r *Registration) Wait() {
	<-r.done
}

// Release gives the registration back, for a subcommand that runs no app: the signals get
// their default effect again, and one that arrived while drainit started is raised again, so
// that it has the effect it would have had (a Ctrl-C still ends `drainit check`).
func Release() {
	mu.Lock()
	defer mu.Unlock()
	if taken {
		return
	}
	taken = true
	<-first.done
	signal.Stop(first.Chld)
	signal.Stop(first.Sigs)
	for {
		select {
		case s := <-first.Sigs:
			_ = unix.Kill(os.Getpid(), s.(unix.Signal))
		default:
			return
		}
	}
}
