// Package signals names signals, decides which of them drainit forwards to the app and when it
// registers them, parses the rewrite and exit-status maps given on the command line, knows the
// servers whose graceful stop is not SIGTERM (apps.go), and turns a wait status into the exit
// code a shell would report.
//
// Everything here is pure: no signal is sent or caught in this package, which is why the
// manifest check and the configuration can link it. What drainit does with its own signals is
// in signals/early (its registration at start, the dispositions it inherited) and
// internal/startsig (its entry point, and the mask its children start with).
package signals

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// MaxSignal is the highest signal number Linux knows (SIGRTMAX).
const MaxSignal = 64

// Parse reads a signal given as a name with or without the SIG prefix, in any case ("TERM",
// "sigterm", "SIGTERM"), as a number ("15"), or as a real-time offset ("RTMIN+2").
func Parse(s string) (syscall.Signal, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	if t == "" {
		return 0, errors.New("empty signal name")
	}
	if n, err := strconv.Atoi(t); err == nil {
		if n < 1 || n > MaxSignal {
			return 0, fmt.Errorf("signal number %d out of range 1-%d", n, MaxSignal)
		}
		return syscall.Signal(n), nil
	}
	t = strings.TrimPrefix(t, "SIG")
	if rest, ok := strings.CutPrefix(t, "RTMIN"); ok {
		return parseRealtime(s, rest, rtMin, 1)
	}
	if rest, ok := strings.CutPrefix(t, "RTMAX"); ok {
		return parseRealtime(s, rest, MaxSignal, -1)
	}
	if sig := signalNum("SIG" + t); sig != 0 {
		return sig, nil
	}
	// Aliases that linuxNames does not hold.
	switch t {
	case "IOT":
		return SIGABRT, nil
	case "POLL":
		return SIGIO, nil
	}
	return 0, fmt.Errorf("unknown signal %q", s)
}

// rtMin is the first real-time signal an application may use. The kernel's SIGRTMIN is 32, but
// C libraries keep 32 and 33 for themselves, so RTMIN means 34 here as it does for kill(1).
const rtMin = 34

func parseRealtime(orig, rest string, base, dir int) (syscall.Signal, error) {
	off := 0
	if rest != "" {
		sign := rest[0]
		if (dir > 0 && sign != '+') || (dir < 0 && sign != '-') {
			return 0, fmt.Errorf("unknown signal %q", orig)
		}
		n, err := strconv.Atoi(rest[1:])
		if err != nil || n < 0 {
			return 0, fmt.Errorf("unknown signal %q", orig)
		}
		off = n
	}
	n := base + dir*off
	if n < rtMin || n > MaxSignal {
		return 0, fmt.Errorf("signal %q out of range", orig)
	}
	return syscall.Signal(n), nil
}

// Name returns the conventional name of sig ("SIGTERM"), or "SIGRTMIN+N" for a real-time signal.
func Name(sig syscall.Signal) string {
	if sig >= rtMin && sig <= MaxSignal {
		if sig == rtMin {
			return "SIGRTMIN"
		}
		return "SIGRTMIN+" + strconv.Itoa(int(sig-rtMin))
	}
	if n := signalName(sig); n != "" {
		return n
	}
	return "SIG" + strconv.Itoa(int(sig))
}

// Forwardable reports whether drainit passes sig on to the app when drainit receives it.
//
// Not forwarded, and why:
//   - KILL, STOP: cannot be caught, so drainit never sees them.
//   - CHLD: it tells drainit about its own children; the app has its own.
//   - URG: the Go runtime sends it to its own threads for preemption; forwarding it would spray
//     the app with signals it never asked for.
//   - PROF: the Go runtime takes it for its profiler before os/signal would see it.
//   - PIPE: drainit cannot tell one sent by kill(2) from one raised by its own write to a closed
//     stderr, and the app, sharing that stderr, gets its own.
//   - 32, 33, 34: the Go runtime never hands them to os/signal (see Uncatchable).
//
// SEGV, BUS, FPE, ILL, TRAP, SYS and ABRT are forwarded: the runtime hands os/signal only those
// that were sent, never a fault of drainit's own (docs/design.md, "Signals"). The runtime's
// handler is no default action the kernel spares an init from: uncaught, a sent one would end
// drainit, as PID 1 too.
func Forwardable(sig syscall.Signal) bool {
	if sig < 1 || sig > MaxSignal {
		return false
	}
	switch sig {
	case SIGKILL, SIGSTOP, SIGCHLD, SIGURG, SIGPROF, SIGPIPE, 32, 33, 34:
		return false
	}
	return true
}

// Uncatchable are the signals no Go program on Linux (amd64, arm64 and the rest: the runtime's
// sigtab_linux_generic.go) receives through os/signal, besides KILL and STOP:
//   - 32 and 33, which C libraries keep for thread cancellation and set*id broadcast; the
//     runtime takes 33 for its own all-threads syscalls;
//   - 34, which musl uses for its own synchronous calls and glibc programs know as SIGRTMIN.
//
// The runtime installs no handler for 32 and 34, so their default action (terminate) applies: a
// `kill -34` would end drainit and leave the app running with no reaper (early.DiscardUncatchable
// has what drainit does about it).
var Uncatchable = []syscall.Signal{32, 33, 34}

// early are the forwardable signals that must be caught before the app starts: those whose
// default effect in a Go program would end drainit (TERM, INT, HUP, QUIT: the first four, which
// signals/early registers first; STKFLT; the faults when sent: ILL, TRAP, ABRT, BUS, FPE, SEGV,
// SYS) or stop it (TSTP, TTIN, TTOU); CONT; and the ones people and orchestrators actually send
// (USR1, USR2, WINCH, ALRM), which must reach an app that is up even in its first milliseconds
// (bench/STARTUP.md measured leaving those five late: −0.25 ms start-up, but one sent then was
// lost).
var early = []syscall.Signal{
	SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGSTKFLT,
	SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE, SIGSEGV, SIGSYS,
	SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT, SIGALRM,
	SIGTSTP, SIGTTIN, SIGTTOU,
}

// faults are the signals that are a fault when the kernel raises them for a thread's own
// instruction, and the runtime's handler, already on them at start, throws or panics.
var faults = []syscall.Signal{SIGILL, SIGTRAP, SIGBUS, SIGFPE, SIGSEGV, SIGSYS}

// Faults lists the early signals that need no round trip through the runtime's signal-mask
// thread to register (ABRT does: it is also a plain notification), so signals/early registers
// them with the first four: the faults, which a kill can send.
func Faults() []os.Signal { return osSignals(faults) }

// Early lists the forwardable signals to register before the app starts (see Late for why
// there are two). SIGCHLD is not among them: it goes to a channel of its own (supervisor.New).
func Early() []os.Signal { return osSignals(early) }

// osSignals is sigs as os/signal takes them.
func osSignals(sigs []syscall.Signal) []os.Signal {
	out := make([]os.Signal, len(sigs))
	for i, s := range sigs {
		out[i] = s
	}
	return out
}

// Late lists the forwardable signals not in Early: the real-time ones, IO, PWR, XCPU, XFSZ,
// VTALRM (35 on Linux/amd64). drainit registers them one at a time after the app has started
// (cmd/drainit, lateSignalsAfter, has why); until then the Go runtime drops them (none of them
// ends a Go program by default).
func Late() []os.Signal {
	var out []os.Signal
	for s := syscall.Signal(1); s <= MaxSignal; s++ {
		if Forwardable(s) && !slices.Contains(early, s) {
			out = append(out, s)
		}
	}
	return out
}

// Rewrite maps a received signal to the one the app gets. A mapping to 0 drops the signal.
type Rewrite map[syscall.Signal]syscall.Signal

// Apply returns what sig becomes; ok is false when the signal is dropped.
func (r Rewrite) Apply(sig syscall.Signal) (out syscall.Signal, ok bool) {
	to, found := r[sig]
	if !found {
		return sig, true
	}
	return to, to != 0
}

// ParseRewrite reads "FROM:TO,FROM:TO" ("HUP:USR1,TERM:QUIT"). TO may be 0 or "none" to drop
// FROM. "=" is accepted in place of ":". An empty string is an empty map. A signal that cannot be
// forwarded (CHLD, KILL, …) is an error as a source, since drainit never forwards it anyway.
func ParseRewrite(s string) (Rewrite, error) {
	r := Rewrite{}
	err := eachPair(s, func(from, to string) error {
		f, err := Parse(from)
		if err != nil {
			return err
		}
		if !Forwardable(f) {
			return fmt.Errorf("%s is never forwarded, so it cannot be rewritten", Name(f))
		}
		var t syscall.Signal
		if tt := strings.ToUpper(strings.TrimSpace(to)); tt != "NONE" && (tt == "" || strings.Trim(tt, "0") != "") { // 0, 00: none
			if t, err = Parse(to); err != nil {
				return err
			}
		}
		if _, dup := r[f]; dup {
			return fmt.Errorf("%s rewritten twice", Name(f))
		}
		r[f] = t
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// ExitMap remaps the app's exit code before drainit exits with it.
type ExitMap map[int]int

// Apply returns the remapped code.
func (m ExitMap) Apply(code int) int {
	if to, ok := m[code]; ok {
		return to
	}
	return code
}

// ParseExitMap reads "FROM:TO,FROM:TO" ("143:0,130:0"), codes 0-255. "=" is accepted in place
// of ":". An empty string is an empty map.
func ParseExitMap(s string) (ExitMap, error) {
	m := ExitMap{}
	err := eachPair(s, func(from, to string) error {
		f, err := parseCode(from)
		if err != nil {
			return err
		}
		t, err := parseCode(to)
		if err != nil {
			return err
		}
		if _, dup := m[f]; dup {
			return fmt.Errorf("exit code %d mapped twice", f)
		}
		m[f] = t
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

func parseCode(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 || n > 255 {
		return 0, fmt.Errorf("exit code %q is not a number from 0 to 255", s)
	}
	return n, nil
}

// eachPair splits "a:b,c:d" and calls fn for each pair; empty entries (a trailing comma) are
// skipped.
func eachPair(s string, fn func(from, to string) error) error {
	for entry := range strings.SplitSeq(s, ",") {
		if strings.TrimSpace(entry) == "" {
			continue
		}
		from, to, ok := strings.Cut(entry, ":")
		if !ok {
			from, to, ok = strings.Cut(entry, "=")
		}
		if !ok {
			return fmt.Errorf("entry %q is not FROM:TO", entry)
		}
		if err := fn(from, to); err != nil {
			return fmt.Errorf("entry %q: %w", entry, err)
		}
	}
	return nil
}
