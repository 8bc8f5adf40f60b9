// Package startsig records which signals were ignored when the process started, before the Go
// runtime can hide it.
//
// POSIX exec keeps an ignored signal ignored, and an init such as drainit must keep it so for
// the program it runs. But the Go runtime installs its own handler for most signals
// (runtime/signal_unix.go, initsig) before any Go code runs, and then nothing in the program can
// tell an inherited SIG_IGN from a default disposition: os/signal's Ignored reports it for HUP
// and INT only. So the package brings an ELF entry point of its own, in assembly for each Linux
// architecture drainit ships for (amd64, arm64, arm, ppc64le, s390x, riscv64): it asks the
// kernel for every signal's disposition (rt_sigaction without a new action) and then jumps to
// the runtime's own entry point, leaving the stack, and with it argc, argv, the environment and
// the auxiliary vector, as the kernel made it.
//
// It runs only if the binary is linked with it as the entry point:
//
//	go build -ldflags '-E github.com/drainit/drainit/internal/startsig.entry' ./cmd/drainit
//
// (EntryFlag). Without that flag (a plain `go install`) the code is linked but never runs, and
// Ignored says so. With it, a build for another GOOS or GOARCH fails ("missing entry symbol"),
// as does one of a program that does not import this package.
//
// What was checked, on Go 1.26: the linker keeps the entry symbol and what it jumps to (its
// deadcode pass starts from the -E symbol), and readelf -h shows it as the entry address; a
// PIE build works too on amd64 (the dynamic loader runs first, then this entry point). Under
// qemu-user (how the tests run the other architectures) an ignored signal stays ignored for
// the guest, but the real-time signals are renumbered: the guest's 38 is the host's 40.
package startsig

// EntryFlag is the linker flag (for -ldflags) that makes this package's entry point the
// program's.
const EntryFlag = "-E=github.com/drainit/drainit/internal/startsig.entry"

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
)

// Ignored returns the signals whose disposition was SIG_IGN when the process started, as a
// mask with bit n-1 for signal n, and whether it knows: false when the entry point did not run
// (the binary was linked without EntryFlag, or the architecture has none).
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
