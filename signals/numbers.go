package signals

import "syscall"

// The Linux signals by their Linux numbers (amd64, arm64, arm, ppc64le, s390x, riscv64 share
// them), whatever GOOS drainit is built for: drainit check also runs on macOS and Windows, where
// the native numbers differ (macOS's USR1 is 30) or do not exist, and the manifests it reads are
// for Linux containers. On Linux they equal golang.org/x/sys/unix's (a test keeps them so).
const (
	SIGHUP    syscall.Signal = 1
	SIGINT    syscall.Signal = 2
	SIGQUIT   syscall.Signal = 3
	SIGILL    syscall.Signal = 4
	SIGTRAP   syscall.Signal = 5
	SIGABRT   syscall.Signal = 6
	SIGBUS    syscall.Signal = 7
	SIGFPE    syscall.Signal = 8
	SIGKILL   syscall.Signal = 9
	SIGUSR1   syscall.Signal = 10
	SIGSEGV   syscall.Signal = 11
	SIGUSR2   syscall.Signal = 12
	SIGPIPE   syscall.Signal = 13
	SIGALRM   syscall.Signal = 14
	SIGTERM   syscall.Signal = 15
	SIGSTKFLT syscall.Signal = 16
	SIGCHLD   syscall.Signal = 17
	SIGCONT   syscall.Signal = 18
	SIGSTOP   syscall.Signal = 19
	SIGTSTP   syscall.Signal = 20
	SIGTTIN   syscall.Signal = 21
	SIGTTOU   syscall.Signal = 22
	SIGURG    syscall.Signal = 23
	SIGXCPU   syscall.Signal = 24
	SIGXFSZ   syscall.Signal = 25
	SIGVTALRM syscall.Signal = 26
	SIGPROF   syscall.Signal = 27
	SIGWINCH  syscall.Signal = 28
	SIGIO     syscall.Signal = 29
	SIGPWR    syscall.Signal = 30
	SIGSYS    syscall.Signal = 31
)

// linuxNames are the names of Linux's standard signals, 1 to 31, as golang.org/x/sys/unix's
// SignalName gives them on Linux; names.go's lookups use them on every GOOS.
var linuxNames = [...]string{
	SIGHUP: "SIGHUP", SIGINT: "SIGINT", SIGQUIT: "SIGQUIT", SIGILL: "SIGILL", SIGTRAP: "SIGTRAP",
	SIGABRT: "SIGABRT", SIGBUS: "SIGBUS", SIGFPE: "SIGFPE", SIGKILL: "SIGKILL", SIGUSR1: "SIGUSR1",
	SIGSEGV: "SIGSEGV", SIGUSR2: "SIGUSR2", SIGPIPE: "SIGPIPE", SIGALRM: "SIGALRM", SIGTERM: "SIGTERM",
	SIGSTKFLT: "SIGSTKFLT", SIGCHLD: "SIGCHLD", SIGCONT: "SIGCONT", SIGSTOP: "SIGSTOP", SIGTSTP: "SIGTSTP",
	SIGTTIN: "SIGTTIN", SIGTTOU: "SIGTTOU", SIGURG: "SIGURG", SIGXCPU: "SIGXCPU", SIGXFSZ: "SIGXFSZ",
	SIGVTALRM: "SIGVTALRM", SIGPROF: "SIGPROF", SIGWINCH: "SIGWINCH", SIGIO: "SIGIO", SIGPWR: "SIGPWR",
	SIGSYS: "SIGSYS",
}
