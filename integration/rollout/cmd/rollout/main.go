// Command rollout runs the zero-downtime harness (package rollout): it stops one pod of a small
// service under load, in each scenario and at each propagation delay, and prints what the clients
// lost. It builds nothing: give it the drainit and testapp binaries. It needs root. The nginx-*
// scenarios run the system's nginx (-nginx); without it they are skipped, except under CI=true,
// where a scenario that cannot run is a failure.
//
//	rollout -drainit bin/drainit -testapp bin/testapp [-nginx PATH] [-scenarios LIST]
//	        [-propagation LIST] [-repeat N] [-parallel N] [-json | -drain-table]
//
// -scenarios takes keys, "all", or "drains" (adaptive drain beside fixed 5 s and 10 s drains);
// -drain-table prints, as Markdown, the pod stop duration at zero failures per scenario and delay
// (what `make bench` reports) instead of the full table. With -report FILE it runs nothing and
// prints the table (or -drain-table) of a report that -json or -json-out wrote.
//
// Exit status: 0 when every check holds, 1 when one does not or a run could not be done, 2 for
// bad usage.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/drainit/drainit/integration/rollout"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rollout", flag.ContinueOnError)
	fs.SetOutput(stderr)
	def := rollout.DefaultConfig()
	var cfg rollout.Config
	var keys, props string
	var repeat int
	var asJSON, drainTable, quiet bool
	var jsonOut, reportIn string
	fs.StringVar(&cfg.Drainit, "drainit", "", "path to the drainit binary (required)")
	fs.StringVar(&cfg.Testapp, "testapp", "", "path to the testapp binary (required)")
	fs.StringVar(&cfg.Tini, "tini", "", "path to tini (default: from PATH)")
	fs.StringVar(&cfg.DumbInit, "dumb-init", "", "path to dumb-init (default: from PATH)")
	fs.StringVar(&cfg.Nginx, "nginx", "", "path to nginx, for the nginx-* scenarios (default: "+rollout.NginxPath+")")
	fs.StringVar(&keys, "scenarios", strings.Join(rollout.DefaultKeys(), ","), "comma-separated scenarios, \"all\", or \"drains\" ("+strings.Join(rollout.DrainKeys(), ",")+"): "+strings.Join(allKeys(), ", "))
	fs.StringVar(&props, "propagation", "0.2s,1s,3s", "comma-separated endpoint propagation delays")
	fs.IntVar(&repeat, "repeat", 1, "stops per scenario and propagation delay")
	fs.IntVar(&cfg.Parallel, "parallel", 6, "runs at once")
	fs.IntVar(&cfg.Pods, "pods", def.Pods, "pods behind the balancer (the first one is stopped)")
	fs.DurationVar(&cfg.Grace, "grace", def.Grace, "the pods' terminationGracePeriodSeconds")
	fs.DurationVar(&cfg.AppDelay, "delay", def.AppDelay, "how long each request takes in the app")
	fs.Float64Var(&cfg.Rate, "rate", def.Rate, "new-connection requests per second")
	fs.IntVar(&cfg.KeepAliveClients, "keepalive-clients", def.KeepAliveClients, "keep-alive clients")
	fs.Float64Var(&cfg.KeepAliveRate, "keepalive-rate", def.KeepAliveRate, "keep-alive requests per second, all clients together")
	fs.DurationVar(&cfg.Warmup, "warmup", def.Warmup, "load before the deletion")
	fs.DurationVar(&cfg.Tail, "tail", def.Tail, "load after the pod is gone and the propagation delay over")
	fs.DurationVar(&cfg.RequestTimeout, "timeout", def.RequestTimeout, "request timeout")
	fs.DurationVar(&cfg.CutAfter, "cut-after", 0, "a request a pod closes unanswered after having it this long was cut in flight; sooner, dropped on arrival (default: a fifth of -delay)")
	fs.BoolVar(&asJSON, "json", false, "write the JSON report (rows, checks, drains and every run) instead of the table")
	fs.BoolVar(&drainTable, "drain-table", false, "write the stop duration at zero failures per scenario and delay (Markdown) and the checks, instead of the table")
	fs.StringVar(&jsonOut, "json-out", "", "also write the JSON report to this file")
	fs.StringVar(&reportIn, "report", "", "run nothing: print the table (or -drain-table) of this JSON report, written by -json or -json-out")
	fs.BoolVar(&quiet, "q", false, "no progress lines on stderr")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "rollout: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if asJSON && drainTable {
		fmt.Fprintln(stderr, "rollout: -json and -drain-table: choose one")
		return 2
	}
	if reportIn != "" {
		return printReport(reportIn, drainTable, stdout, stderr)
	}
	switch keys {
	case "all":
		keys = strings.Join(allKeys(), ",")
	case "drains":
		keys = strings.Join(rollout.DrainKeys(), ",")
	}
	scenarios, err := rollout.Lookup(strings.Split(keys, ","))
	if err != nil {
		fmt.Fprintf(stderr, "rollout: -scenarios: %v\n", err)
		return 2
	}
	delays, err := parseDurations(props)
	if err != nil {
		fmt.Fprintf(stderr, "rollout: -propagation: %v\n", err)
		return 2
	}
	if repeat < 1 || cfg.Parallel < 1 {
		fmt.Fprintln(stderr, "rollout: -repeat and -parallel must be at least 1")
		return 2
	}
	if cfg.Drainit == "" || cfg.Testapp == "" {
		fmt.Fprintln(stderr, "rollout: -drainit and -testapp are required (it builds nothing: see scripts/demo.sh)")
		return 2
	}
	if !quiet {
		cfg.Log = stderr
	}
	r, err := rollout.NewRunner(cfg)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	// A scenario whose init or app is not installed is skipped, except under CI=true, where
	// everything is installed (.ci/run) and a skip would hide a broken setup.
	var usable []rollout.Scenario
	for _, s := range scenarios {
		if err := r.Available(s); err != nil {
			if os.Getenv("CI") == "true" {
				fmt.Fprintf(stderr, "rollout: CI=true: cannot run %s: %v\n", s.Key, err)
				return 1
			}
			fmt.Fprintf(stderr, "rollout: skipping %s: %v\n", s.Key, err)
			continue
		}
		usable = append(usable, s)
	}
	start := time.Now()
	results, runErr := r.RunAll(ctx, usable, delays, repeat)
	claims := rollout.ClaimsFor(usable)
	rows := rollout.Summarize(results, claims)
	checks := rollout.Checks(rows)
	report := rollout.Report{Rows: rows, Checks: checks, Drains: rollout.DrainStats(results, claims), Results: results}
	switch {
	case asJSON:
		err = rollout.WriteJSON(stdout, report)
	case drainTable:
		err = rollout.WriteDrainTable(stdout, report.Drains)
		if err == nil {
			_, err = fmt.Fprintln(stdout) // Markdown: the checks are a paragraph of their own
		}
		if err == nil {
			err = rollout.WriteChecks(stdout, checks)
		}
	default:
		err = rollout.WriteTable(stdout, rows, checks)
	}
	if err == nil && jsonOut != "" {
		err = writeJSONFile(jsonOut, report)
	}
	if err != nil {
		fmt.Fprintf(stderr, "rollout: writing the report: %v\n", err)
		return 1
	}
	if !quiet {
		fmt.Fprintf(stderr, "rollout: %d runs in %s\n", len(results), time.Since(start).Round(100*time.Millisecond))
	}
	status := 0
	if runErr != nil {
		fmt.Fprintf(stderr, "rollout: %v\n", runErr)
		status = 1
	}
	for _, c := range checks {
		if !c.OK {
			status = 1
		}
	}
	if errors.Is(runErr, context.Canceled) {
		status = 130
	}
	return status
}

// printReport prints the table, or the drain table, of a saved JSON report. The exit status says
// whether its checks held, as after a run.
func printReport(path string, drainTable bool, stdout, stderr io.Writer) int {
	b, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(stderr, "rollout: -report: %v\n", err)
		return 1
	}
	var report rollout.Report
	if err := json.Unmarshal(b, &report); err != nil {
		fmt.Fprintf(stderr, "rollout: -report %s: %v\n", path, err)
		return 1
	}
	if drainTable {
		err = rollout.WriteDrainTable(stdout, report.Drains)
		if err == nil {
			_, err = fmt.Fprintln(stdout)
		}
		if err == nil {
			err = rollout.WriteChecks(stdout, report.Checks)
		}
	} else {
		err = rollout.WriteTable(stdout, report.Rows, report.Checks)
	}
	if err != nil {
		fmt.Fprintf(stderr, "rollout: writing the report: %v\n", err)
		return 1
	}
	for _, c := range report.Checks {
		if !c.OK {
			return 1
		}
	}
	return 0
}

func writeJSONFile(path string, report rollout.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := rollout.WriteJSON(f, report); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

func allKeys() []string {
	var keys []string
	for _, s := range rollout.Scenarios() {
		keys = append(keys, s.Key)
	}
	return keys
}

// parseDurations parses "0.2s,1s,3s"; a bare number is seconds.
func parseDurations(list string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		d, err := time.ParseDuration(f)
		if err != nil {
			secs, ferr := strconv.ParseFloat(f, 64)
			if ferr != nil {
				return nil, fmt.Errorf("%q: not a duration (0.2s, 1s, or seconds)", f)
			}
			d = time.Duration(secs * float64(time.Second))
		}
		if d < 0 {
			return nil, fmt.Errorf("%q: negative", f)
		}
		out = append(out, d)
	}
	return out, nil
}
