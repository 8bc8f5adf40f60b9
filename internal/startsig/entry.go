//go:build linux && (amd64 || arm64 || arm || ppc64le || s390x || riscv64)

package startsig

// entry is the ELF entry point (entry_linux_$GOARCH.s), for the linker's -E flag only: nothing
// may call it, since it never returns and runs before the Go runtime exists.
//
//lint:ignore U1000 the linker's -E refers to it by name, no Go code does
func entry()

// catch is the entry point's signal handler ("A stop signal before drainit can take it"),
// called by the kernel or by the runtime's forwarding, with the C calling convention.
//
//lint:ignore U1000 the entry point refers to it, no Go code does
func catch()
