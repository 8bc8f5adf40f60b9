// Command bench measures drainit side by side with tini, dumb-init and catatonit, each running
// as PID 1 of a fresh PID namespace: start-up overhead over a bare exec of /bin/true, idle RSS,
// SIGUSR1 forwarding latency, time to reap 2000 orphans, and binary size, beside the Go floor
// (bench/mininit, the least a Go init can do), which the targets are relative to; then how fast
// drainit's control server answers the kubelet while another client holds 300 slow
// connections. It prints Markdown tables with the targets and writes them, with the
// machine it ran on, to bench/RESULTS.md.
//
//	go run ./bench [-quick] [-ns unshare|clone] [-drainit BIN] [-out FILE] [-only PHASES] [-extra NAME=PATH,...]
//
// It needs root (PID namespaces, made by integration/pod, the launcher the integration tests
// use too). An init that is not installed is skipped with a note. Every measurement interleaves
// the inits in a new random order each round, so that drift in the machine's load hits them
// alike.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

// options are the command-line settings of one run.
type options struct {
	quick   bool
	ns      string // "unshare" (integration/pod's Fork: unshare --pid --fork --mount-proc --kill-child) or "clone" (its Direct: clone(CLONE_NEWPID) from Go)
	drainit string // a prebuilt drainit; empty: build a stripped static one with its entry point
	out     string // where the Markdown goes; "-" or "": stdout only
	orphans int
	ref     bool            // also measure the Go reference inits (mininit)
	entry   bool            // also measure drainit linked the other way, with or without its entry point
	only    map[string]bool // phases to run; empty: all
	extra   []string        // NAME=PATH: more inits to measure as reference points (e.g. drainit variants)
}

func main() {
	var o options
	flag.BoolVar(&o.quick, "quick", false, "a short run: fewer repetitions (numbers are indicative only)")
	flag.StringVar(&o.ns, "ns", "unshare", "how to make the PID namespace: unshare (the unshare(1) command, with --mount-proc) or clone (CLONE_NEWPID from the benchmark itself)")
	flag.StringVar(&o.drainit, "drainit", "", "drainit binary to measure (default: build one as it ships: CGO_ENABLED=0 -trimpath -ldflags='-s -w')")
	flag.StringVar(&o.out, "out", "bench/RESULTS.md", "file to write the results to (relative to the module root; empty: none)")
	flag.IntVar(&o.orphans, "orphans", 2000, "orphans to reap per round")
	flag.BoolVar(&o.ref, "ref", true, "also measure mininit, a minimal Go init: the Go floor the targets are relative to")
	flag.BoolVar(&o.entry, "entry", true, "also measure drainit built the other way: with its own ELF entry point (package startsig/entry) if the one measured has none, or without (-tags noentrypoint)")
	extra := flag.String("extra", "", "more inits to measure as reference points, NAME=PATH [ARG...],... (run as PATH ARG... -- APP; e.g. a drainit variant)")
	only := flag.String("only", "", "run only these phases, comma-separated: startup, exec, signals, reap, control (for investigating; the table then has gaps)")
	flag.Parse()
	for e := range strings.SplitSeq(*extra, ",") {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		if name, cmd, ok := strings.Cut(e, "="); !ok || name == "" || strings.TrimSpace(cmd) == "" {
			fmt.Fprintf(os.Stderr, "bench: -extra %q: want NAME=PATH [ARG...]\n", e)
			os.Exit(2)
		}
		o.extra = append(o.extra, e)
	}
	o.only = map[string]bool{}
	for p := range strings.SplitSeq(*only, ",") {
		switch p = strings.TrimSpace(p); p {
		case "":
		case "startup", "exec", "signals", "reap", "control":
			o.only[p] = true
		default:
			fmt.Fprintf(os.Stderr, "bench: -only %q: unknown phase %q\n", *only, p)
			os.Exit(2)
		}
	}
	if o.ns != "unshare" && o.ns != "clone" {
		fmt.Fprintf(os.Stderr, "bench: -ns %q: must be unshare or clone\n", o.ns)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}
