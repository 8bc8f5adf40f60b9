//go:build linux

// Package early registers drainit's signals while the program initialises: before main, and
// before most of the packages drainit imports are initialised (zerolog, YAML, net, the
// configuration), so that a signal sent in drainit's first milliseconds finds drainit listening.
//
// Only cmd/drainit imports it: importing it changes how the process handles signals. The run
// subcommand takes the registration (Take); the other subcommands give it back (Release).
//
// Until the registration, a signal finds one of two things, and no Go program can do better:
//   - Before the Go runtime installs its own handlers, in the first tens of microseconds after
//     exec (and, under a container runtime, before drainit is even exec'd), the signals still
//     have the default disposition. As a PID namespace's init, drainit then never gets them: the
//     kernel discards a signal to an init that has no handler for it. Not as PID 1, TERM, INT or
//     HUP ends drainit.
//   - After that, until this package's initialisation has registered them, the runtime's
//     handler acts as the signal's default: TERM, INT and HUP end a Go program. As PID 1 the
//     kernel refuses the runtime's attempt to die by the signal, and the runtime exits with
//     status 2 instead.
//
// Go initialises the packages in import-path order as their imports become ready, and this
// package needs only os/signal, the signals package and what they import, so it comes before
// the heavy ones.
package early

import (
	"os"
	"os/signal"
	"slices"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/signals"
)

// Registration is what drainit registered for its signals.
type Registration struct {
	// Chld has a channel of its own, of one: a reap collects every child that has exited by
	// then, so one pending notification is all the supervisor needs, and a storm of exiting
	// orphans (measured: 3000 released at once filled a shared channel of 128) can never crowd
	// a SIGTERM out of the channel the other signals wait in, where os/signal would drop it.
	Chld chan os.Signal
	// Sigs holds two of each signal, more than the runtime can have pending at once (it
	// coalesces repeats of the same signal). signals.Early are registered for it; signals.Late
	// are for the run subcommand to add (see there for why they wait).
	Sigs chan os.Signal
	// Ignored are the signals that were ignored when drainit started (signals.InheritedIgnored):
	// they are not registered and stay ignored, so that the app inherits them ignored as exec
	// would have it.
	Ignored []unix.Signal
	// AllSeen is whether drainit could see every ignored signal (its own entry point ran) or
	// only HUP, INT, TSTP, TTIN and TTOU, for the log.
	AllSeen bool
	// Err is the failure to ignore the uncatchable signals (signals.IgnoreUncatchable), for the
	// log.
	Err error
}

var (
	mu    sync.Mutex
	first = register() // at package initialisation: the point of the package
	taken bool
)

// register registers the signals and returns where they arrive.
func register() *Registration {
	r := &Registration{}
	r.Ignored, r.AllSeen = signals.InheritedIgnored()
	// The signals Go cannot catch would otherwise end drainit at their default action.
	r.Err = signals.IgnoreUncatchable()
	r.Sigs = make(chan os.Signal, 2*signals.MaxSignal)
	early := signals.Early()
	if len(r.Ignored) > 0 {
		early = r.notIgnored(early)
		// The runtime has its own handler on most of them by now (only HUP and INT are marked
		// ignored already): SIG_IGN again, which the runtime leaves in place in the app's fork
		// and exec keeps.
		for _, s := range r.Ignored {
			signal.Ignore(s)
		}
	}
	// TERM first: os/signal marks a signal wanted, after which the runtime queues it instead of
	// acting on it, before its round trip to the runtime's signal goroutine (about 20 µs each).
	signal.Notify(r.Sigs, early...)
	r.Chld = make(chan os.Signal, 1)
	signal.Notify(r.Chld, unix.SIGCHLD)
	return r
}

// Late lists signals.Late but for the ignored ones, for the run subcommand to register: a
// Notify would undo the Ignore.
func (r *Registration) Late() []os.Signal {
	return r.notIgnored(signals.Late())
}

func (r *Registration) notIgnored(sigs []os.Signal) []os.Signal {
	return slices.DeleteFunc(sigs, func(s os.Signal) bool { return slices.Contains(r.Ignored, s.(unix.Signal)) })
}

// Take returns the registration made as drainit started, with whatever has arrived since. A
// second call (tests run the run subcommand more than once) registers anew.
func Take() *Registration {
	mu.Lock()
	defer mu.Unlock()
	if !taken {
		taken = true
		return first
	}
	return register()
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
