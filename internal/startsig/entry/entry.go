//go:build linux && (amd64 || arm64 || arm || ppc64le || s390x || riscv64) && !noentrypoint

package entry

// The assembly writes the variables of package startsig's Go side (startsig.h), which must be
// linked with it.
import _ "github.com/drainit/drainit/internal/startsig"

// catch is the entry point's signal handler (package startsig's "A stop signal before drainit
// can take it"), called by the kernel or by the runtime's forwarding, with the C calling
// convention.
//
//lint:ignore U1000 the entry point refers to it, no Go code does
func catch()

// The catch's data, which only the assembly uses.
var (
	// catching[n] is 1 for each signal the entry point catches where it finds it at the
	// default.
	//lint:ignore U1000 the assembly uses it
	catching = [65]uint8{1: 1, 2: 1, 3: 1, 15: 1}
	// catchOrder is the order the entry point catches them in, first thing, TERM first (the
	// stop signal of most runtimes), ending in 0.
	//lint:ignore U1000 the assembly uses it
	catchOrder = [5]uint8{15, 2, 3, 1}
	// catchAct is catch's disposition (the kernel's struct sigaction, 32 bytes at most),
	// filled in by the entry point; query[n] is where catch asks the kernel for signal n's
	// (one slot each: two signals may come at once).
	//lint:ignore U1000 the assembly uses it
	catchAct [32]byte
	//lint:ignore U1000 the assembly uses it
	query [65][32]byte
	// refusal[n] is what catch writes before it exits 128+n (for the signals the runtime dies
	// by: a composite of constants, so it is in the binary's data before the runtime starts).
	//lint:ignore U1000 the assembly uses it
	refusal = [65]string{
		1:  "drainit: SIGHUP came as drainit started, before it could handle it: exiting 129, the app not started\n",
		2:  "drainit: SIGINT came as drainit started, before it could handle it: exiting 130, the app not started\n",
		15: "drainit: SIGTERM came as drainit started, before it could handle it: exiting 143, the app not started\n",
	}
)
