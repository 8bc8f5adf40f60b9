// Command probe prints what startsig saw at the entry point, and its arguments and an
// environment variable, which the entry point must have left where the runtime finds them.
// With STARTSIG_PIN set it prints the start's pin instead: the CPUs the runtime counted, its
// GOMAXPROCS, the affinity of the thread it runs on, then Unpin's error and the affinities of
// all its threads after it. With STARTSIG_TERM set it shows what becomes of a SIGTERM at its
// start: "init" sends itself one while the packages initialise, before anything registered it;
// "after" once Caught has disarmed the entry point's handler (the runtime's own default then);
// "race" registers it at once, as drainit does, and prints what Caught returned and whether a
// SIGTERM came after that, for a test that sends it one as it starts. With STARTSIG_MASK set it
// prints the signal mask the entry point saw.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/drainit/drainit/internal/proc"
	"github.com/drainit/drainit/internal/startsig"
	_ "github.com/drainit/drainit/internal/startsig/entry"
)

var term = os.Getenv("STARTSIG_TERM")

func init() {
	if term == "init" {
		_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
		time.Sleep(time.Second) // the refusal ends the process long before
		fmt.Println("init: still running")
	}
}

func main() {
	switch term {
	case "after":
		fmt.Printf("caught=%v\n", startsig.Caught())
		_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
		time.Sleep(time.Second) // the default, death, ends the process before
		fmt.Println("after: still running")
		return
	case "race":
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM)
		caught := startsig.Caught()
		fmt.Printf("caught=%v", caught)
		for _, s := range caught { // as signals/early does
			_ = syscall.Kill(os.Getpid(), s)
		}
		select {
		case s := <-c:
			fmt.Printf(" got=%v\n", s)
		case <-time.After(2 * time.Second):
			fmt.Println(" got=none")
		}
		return
	}
	if os.Getenv("STARTSIG_MASK") != "" {
		mask, ok := startsig.Mask()
		fmt.Printf("ran=%v mask=%016x\n", ok, mask)
		return
	}
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
