package main

import (
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/drainit/drainit/internal/config"
	"github.com/drainit/drainit/signals/early"
)

// sleepCmd is `drainit sleep DURATION`: a preStop exec hook for images that have no sleep(1)
// (distroless, scratch). A signal ends it as it ends sleep(1), by that signal (early.DieBy):
// the Go runtime's own defaults would ignore USR1 or ALRM and dump its goroutines on QUIT. sigs
// gets the early.Terminating ones.
func sleepCmd(args []string, sigs <-chan os.Signal, stdout, stderr io.Writer) int {
	const usage = "usage: drainit sleep DURATION (e.g. 5s, 500ms or 5)"
	if len(args) == 1 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		fmt.Fprintln(stdout, usage)
		return 0
	}
	if len(args) == 2 && args[0] == "--" {
		args = args[1:] // the end of options, as sleep(1) takes it
	}
	if len(args) != 1 {
		fmt.Fprintln(stderr, "drainit sleep: "+usage)
		return 2
	}
	d, err := config.ParseDuration(args[0])
	if err != nil {
		fmt.Fprintf(stderr, "drainit sleep: %q: %v\n", args[0], err)
		return 2
	}
	t := time.NewTimer(d)
	select {
	case <-t.C:
		return 0
	case s := <-sigs:
		early.DieBy(s)
		n, _ := s.(syscall.Signal)
		return 128 + int(n)
	}
}
