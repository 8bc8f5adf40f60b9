// Package startsig is drainit's ELF entry point, which runs before the Go runtime: it records
// which signals were ignored when the process started, before the runtime can hide it, it
// catches the stop signals until drainit can take them (Caught), and it holds the process on
// one CPU for its start (Unpin ends that). Children start from here too: the app with the signal
// mask drainit started with (StartInherited), exec hooks with none blocked (StartUnblocked).
//
// POSIX exec keeps an ignored signal ignored, and an init must keep it so for its program; but
// the Go runtime installs its own handler for most signals (runtime/signal_unix.go, initsig)
// before any Go code runs, after which an inherited SIG_IGN cannot be told from a default
// (os/signal's Ignored knows HUP and INT only). So the package brings an ELF entry point of its
// own, in assembly for each Linux architecture drainit ships for (amd64, arm64, arm, ppc64le,
// s390x, riscv64): it asks the kernel for every signal's disposition (rt_sigaction without a new
// action) and then goes on as the runtime's own entry point would, leaving the stack, and with it
// argc, argv, the environment and the auxiliary vector, as the kernel made it.
//
// The assembly is in package entry, which a program imports to start there (cmd/drainit does):
// entry/doc.go says how it takes the runtime's place with no linker flag, so that `go build`,
// `go install …@latest` and the release start the same way. In a program that does not import
// it, or built with -tags noentrypoint, nothing runs before the runtime, and Ignored says so.
//
// What was checked, on Go 1.26: readelf -h shows the entry point's address as the binary's
// entry on every architecture above, and a PIE build works too on amd64 (the dynamic loader
// runs first, then this entry point). Under qemu-user (how the tests run the other
// architectures) an ignored signal stays ignored for the guest, but the real-time signals are
// renumbered: the guest's 38 is the host's 40.
//
// # The start on one CPU
//
// After the signals, the entry point reads the process's CPU affinity (sched_getaffinity, into
// origMask) and sets it to the one CPU it runs on (getcpu; the kernel picked an idle one at
// exec). The Go runtime then counts one CPU and starts with one P. Unpin gives every thread the
// affinity back before drainit starts the app, which inherits it. docs/design.md ("Its start
// runs on one CPU") has why, and bench/STARTUP.md the measurements; drainit's work, one loop of
// signals, children and timers, needs no more than one P. cmd/drainit turns off the runtime's
// periodic GOMAXPROCS update (//go:debug updatemaxprocs=0), which would otherwise raise it to the
// restored CPUs' count within a second. The mask holds 4096 CPUs; where the kernel's is larger
// (sched_getaffinity fails) or getcpu fails, nothing is pinned, and the start is as before.
//
// # A stop signal before drainit can take it
//
// A Go program cannot register a signal before its runtime has started and its packages are
// initialised (package signals/early does it first thing). Until the runtime's handlers
// (initsig), a stop signal at the default is discarded (as PID 1) or ends drainit; from then
// until the registration, the runtime exits 2 without a word on TERM, INT or HUP (docs/design.md,
// "A signal in drainit's first millisecond", has the windows measured). So the entry point, as
// it reads each disposition, puts its own handler (catch, in assembly) on the stop signals HUP,
// INT, QUIT and TERM where they are at the default:
//   - until initsig, the kernel runs catch for such a signal, which notes it in caught and
//     returns; package signals/early sends it again once drainit has registered it (Caught),
//     and the stop sequence runs as for a signal sent a moment later;
//   - from initsig until the registration, the runtime dies by HUP, INT or TERM by first
//     sending it to the handler it found in place (runtime.dieFromSignal clears its own
//     handlingSig, so sigfwdgo forwards to fwdSig, which initsig set to catch): catch, still
//     armed, writes the one line of refusal and exits 128+n, before any app has started, as
//     the README's "Exit status" says;
//   - once drainit has registered them (Caught disarms catch), the runtime never forwards them
//     again, but for a signal drainit gives back (early.Release, for the subcommands that run
//     no app): disarmed, catch returns at once and the runtime's own default follows.
//
// QUIT in the second window is not covered: the runtime answers it with a goroutine dump and
// exit 2 (it throws, and forwards nothing).
package startsig

import (
	"sync/atomic"
	"syscall"
)

// sigaction has room for the kernel's struct sigaction on every architecture the entry point is
// written for (32 bytes at most; 20 on arm); the handler comes first on all of them. It is
// 32 bytes on all of them too, the stride the entry point steps by.
type sigaction struct {
	handler uintptr
	_       [32 - ptrSize]byte
}

const ptrSize = 4 << (^uintptr(0) >> 63)

var (
	// acts[n] is where the entry point had the kernel write signal n's disposition at exec
	// (1 to 64; acts[0] is unused). A failed call leaves a slot zero, which reads as SIG_DFL.
	acts [65]sigaction
	// ran is set to 1 by the entry point after it has filled acts.
	ran uint32

	// origMask is the affinity the process started with, origLen bytes of it (what
	// sched_getaffinity returned); pinMask is the one CPU, cpu, the entry point set instead,
	// which pinned says it did. Unpin puts origMask back.
	origMask [512]byte
	origLen  uintptr
	pinMask  [512]byte
	cpu      uint32
	pinned   uint32

	// startMask is the signal mask the process started with (the kernel's 64 bits: bit n-1
	// for signal n), which the entry point reads before the runtime changes it.
	startMask uint64
)

// Mask returns the signal mask the process started with, bit n-1 for signal n, and whether it
// knows (as Ignored). The Go runtime unblocks HUP, INT, QUIT, TERM and others on every thread
// before any Go code runs, so no thread's mask shows them blocked at the start.
func Mask() (mask uint64, ok bool) {
	return startMask, ran != 0
}

var (
	// armed is 1 until Caught; caught[n] is set by catch for a signal n it took.
	armed  uint32
	caught [65]uint8
)

// Caught disarms the entry point's handler and returns the signals it took before the Go
// runtime's handlers were in place, for the caller to send again now that it has registered
// them. Nothing when the entry point did not run.
func Caught() []syscall.Signal {
	if atomic.SwapUint32(&armed, 0) == 0 {
		return nil
	}
	var sigs []syscall.Signal
	for n := range caught {
		if caught[n] != 0 {
			sigs = append(sigs, syscall.Signal(n))
		}
	}
	return sigs
}

// Ignored returns the signals whose disposition was SIG_IGN when the process started, as a
// mask with bit n-1 for signal n, and whether it knows: false when the entry point did not run
// (the program does not import package entry, was built with -tags noentrypoint, or the
// architecture has none).
func Ignored() (mask uint64, ok bool) {
	if ran == 0 {
		return 0, false
	}
	for n := 1; n < len(acts); n++ {
		if acts[n].handler == 1 { // SIG_IGN
			mask |= 1 << (n - 1)
		}
	}
	return mask, true
}
