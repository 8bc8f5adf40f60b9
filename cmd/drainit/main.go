// Command drainit runs an app as PID 1 (or as a child subreaper) and owns its stop sequence.
// See the README for the options; `drainit --help` lists them.
package main

import (
	"os"
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
		switch args[0] {
		case "version", "--version":
			return versionCmd(os.Stdout)
		case "sleep":
			return sleepCmd(args[1:], os.Stderr)
		case "prestop":
			return prestopCmd(args[1:], os.Stdout, os.Stderr)
		case "check":
			return checkCmd(args[1:], os.Stdin, os.Stdout, os.Stderr)
		}
	}
	return runCmd(args)
}
