package main

import (
	"fmt"
	"io"
	"time"

	"github.com/drainit/drainit/internal/config"
)

// sleepCmd is `drainit sleep DURATION`: a preStop exec hook for images that have no sleep(1)
// (distroless, scratch). Signals keep their default effect, so a SIGTERM ends it at once.
func sleepCmd(args []string, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "drainit sleep: usage: drainit sleep DURATION (e.g. 5s, 500ms or 5)")
		return 2
	}
	d, err := config.ParseDuration(args[0])
	if err != nil {
		fmt.Fprintf(stderr, "drainit sleep: %q: %v\n", args[0], err)
		return 2
	}
	time.Sleep(d)
	return 0
}
