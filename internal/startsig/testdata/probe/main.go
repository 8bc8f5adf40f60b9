// Command probe prints what startsig saw at the entry point, and its arguments and an
// environment variable, which the entry point must have left where the runtime finds them.
// With STARTSIG_PIN set it prints the start's pin instead: the CPUs the runtime counted, its
// GOMAXPROCS, the affinity of the thread it runs on, then Unpin's error and the affinities of
// all its threads after it.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/drainit/drainit/internal/proc"
	"github.com/drainit/drainit/internal/startsig"
)

func main() {
	if os.Getenv("STARTSIG_PIN") == "" {
		mask, ok := startsig.Ignored()
		fmt.Printf("ran=%v ignored=%016x args=%q env=%q\n", ok, mask, os.Args[1:], os.Getenv("STARTSIG_PROBE"))
		return
	}
	start := allowed("/proc/thread-self/status")
	err := startsig.Unpin()
	tasks, _ := filepath.Glob("/proc/self/task/*/status")
	var after []string
	for _, t := range tasks {
		if a := allowed(t); !slices.Contains(after, a) {
			after = append(after, a)
		}
	}
	fmt.Printf("numcpu=%d gomaxprocs=%d start=%s unpin=%v after=%s\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), start, err, strings.Join(after, "|"))
}

// allowed is the Cpus_allowed_list of a /proc status file, "?" where it cannot be read.
func allowed(status string) string {
	v, err := proc.StatusFileField(status, "Cpus_allowed_list")
	if err != nil {
		return "?"
	}
	return v
}
