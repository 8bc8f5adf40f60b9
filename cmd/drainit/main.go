// The runtime keeps the GOMAXPROCS it starts with, 1 where the entry point held the start on
// one CPU (package startsig; runCmd lowers a larger one), rather than raise it to the CPUs'
// count once they are restored.
//go:debug updatemaxprocs=0

// Command drainit runs an app as PID 1 (or as a child subreaper) and owns its stop sequence.
// See the README for the options; `drainit --help` lists them.
package main

import (
	"os"
	"os/signal"

	// Registers drainit's signals before the other packages are initialised: see the package.
	"github.com/drainit/drainit/signals/early"

	"github.com/drainit/drainit/internal/startsig"
	// Makes startsig's ELF entry point the binary's, however it is built: see the package.
	_ "github.com/drainit/drainit/internal/startsig/entry"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	os.Exit(dispatch(os.Args[1:]))
}

// dispatch picks the subcommand; anything that is not one is the run subcommand's arguments, so
// `drainit /app/server` and `drainit -- sleep 5` both run an app.
func dispatch(args []string) int {
	if len(args) > 0 {
		if sub, ok := subcommands()[args[0]]; ok {
			return sub(args[1:])
		}
	}
	return runCmd(args, os.Stdout, os.Stderr)
}

// release gives the early registration back, for a subcommand that runs no app, and puts it back
// on every CPU it was given (it has no app to start first).
func release() {
	early.Release()
	_ = startsig.Unpin()
}

// subcommands are the subcommands by their first argument. config.Subcommands names the same
// ones (a test keeps the two in step), so that drainit check knows which command lines run no app.
func subcommands() map[string]func(args []string) int {
	version := func([]string) int { release(); return versionCmd(os.Stdout) }
	return map[string]func([]string) int{
		"version":   version,
		"--version": version,
		"sleep": func(args []string) int {
			// Caught before the early registration is given back: between the two, a USR1
			// would find the Go runtime's default, which ignores it.
			sigs := make(chan os.Signal, 1)
			signal.Notify(sigs, early.Terminating()...)
			release()
			return sleepCmd(args, sigs, os.Stdout, os.Stderr)
		},
		"prestop": func(args []string) int { release(); return prestopCmd(args, os.Stdout, os.Stderr) },
		"check":   func(args []string) int { release(); return checkCmd(args, os.Stderr) },
	}
}
