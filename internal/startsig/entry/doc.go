// Package entry makes package startsig's ELF entry point the program's: a program that imports
// it (cmd/drainit does, and startsig's test probe) starts there, however it is built (go build,
// go install …@latest, the release), with no linker flag.
//
// Each entry_linux_$GOARCH.s defines, as a DUPOK symbol, the symbol the Go runtime's own entry
// has on that architecture (_rt0_amd64_linux, _rt0_arm64_linux, _rt0_arm_linux,
// _rt0_riscv64_linux, _rt0_s390x_linux; on ppc64le main, which the runtime's entry jumps to
// once it has set the TLS pointer, from a static symbol no other package can name). The linker
// keeps one definition of a name defined twice when one of them is DUPOK: the DUPOK one if it was
// loaded first, and the larger if the other was (cmd/link/internal/loader, addSym: "favor symbol
// with larger size", Go issues 47185, 46653 and 72032). The runtime's is a jump of one to four
// instructions, this package's ~100 instructions, so it is kept either way, and it ends as the
// runtime's did, in the code that follows it. This relies on the linker, not on the runtime's
// internals beyond the names of its entry symbols: TestEntryPoint (package startsig) runs the
// probe, built with plain `go build`, on each of the six architectures (under qemu-user but for
// the machine's own) and fails when the entry point did not run.
//
// Built with -tags noentrypoint, or for another architecture, the package is empty and the
// runtime's entry is the program's (startsig.Ignored then says it does not know): the tests and
// benchmarks use the tag to measure drainit without it.
package entry
