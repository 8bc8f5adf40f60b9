// Command rollout runs the zero-downtime harness (package rollout): it stops one pod of a small
// service under load, in each scenario and at each propagation delay, and prints what the clients
// lost. It builds nothing: give it the drainit and testapp binaries. It needs root. The nginx-*
// scenarios run the system's nginx (-nginx); without it they are skipped, except under CI=true,
// where a scenario that cannot run is a failure.
//
//	rollout -drainit bin/drainit -testapp bin/testapp [-nginx PATH] [-scenarios LIST]
//	        [-propagation LIST] [-topologies LIST] [-rates LIST] [-poisson] [-host-network] [-sidecar]
//	        [-repeat N] [-parallel N] [-json | -drain-table]
//
// -scenarios takes keys, "all", or "drains" (the adaptive drains, quiet auto and 1 s, beside
// fixed 5 s and 10 s drains, and the 1 s one behind pooling L7 proxies, counting connections and
// requests); -topologies adds cells with several proxies dropping the pod each
// at its own time ("staggered", "straggler"); -rates runs every cell at each rate of new
// connections a second at the stopped pod (the load is that times the pods) instead of -rate's
// load; -poisson makes those arrive as a Poisson stream. -drain-table prints, as Markdown, the
// pod stop duration at zero failures per scenario and cell (what `make bench` reports) instead
// of the full table. With -report FILE it runs nothing and prints the table (or -drain-table) of
// a report that -json or -json-out wrote.
//
// A run the machine is too busy to time (the harness's own timers late by more than -cut-after)
// is noisy: a cut, a client's timeout or a stop over its bound in it is reported as noisy, not
// held against drainit (a request that failed otherwise is). The last line then says how busy.
//
// Exit status: 0 when every check holds or is only noisy, 1 when one fails or a run could not
// be done, 2 for bad usage.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
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
	var keys, props, topologies, rates string
	var repeat, repeatFixed int
	var asJSON, drainTable, quiet bool
	var jsonOut, reportIn string
	fs.StringVar(&cfg.Drainit, "drainit", "", "path to the drainit binary (required)")
	fs.StringVar(&cfg.Testapp, "testapp", "", "path to the testapp binary (required)")
	fs.StringVar(&cfg.Tini, "tini", "", "path to tini (default: from PATH)")
	fs.StringVar(&cfg.DumbInit, "dumb-init", "", "path to dumb-init (default: from PATH)")
	fs.StringVar(&cfg.Nginx, "nginx", "", "path to nginx, for the nginx-* scenarios (default: "+rollout.NginxPath+")")
	fs.StringVar(&keys, "scenarios", strings.Join(rollout.DefaultKeys(), ","), "comma-separated scenarios, \"all\", or \"drains\" ("+strings.Join(rollout.DrainKeys(), ",")+"): "+strings.Join(allKeys(), ", "))
	fs.StringVar(&props, "propagation", "0.2s,1s,3s", "comma-separated endpoint propagation delays")
	fs.StringVar(&topologies, "topologies", "", "comma-separated proxy topologies, each a cell of its own: "+strings.Join(topologyNames(), ", "))
	fs.StringVar(&rates, "rates", "", "comma-separated new connections per second at the stopped pod, each cell at each (default: the load of -rate)")
	fs.BoolVar(&cfg.Poisson, "poisson", false, "new-connection requests arrive as a Poisson stream, not at even intervals")
	fs.BoolVar(&cfg.HostNetwork, "host-network", false, "the pods share the harness's network namespace (drainit watches with sock_diag), instead of one each")
	fs.BoolVar(&cfg.Sidecar, "sidecar", false, "each pod's network namespace also holds a sidecar's listener, with traffic of its own")
	fs.IntVar(&repeat, "repeat", 1, "stops per scenario and cell")
	fs.IntVar(&repeatFixed, "repeat-fixed", 0, "stops per cell of the scenarios without a stop bound (fixed drains, the inits), whose cost does not depend on the traffic (default: -repeat)")
	fs.Float64Var(&cfg.MaxRate, "max-rate", rollout.DefaultMaxRate, "new connections a second of the runs under way together (a run over it runs alone)")
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
	cells, err := parseCells(props, topologies, rates)
	if err != nil {
		fmt.Fprintf(stderr, "rollout: %v\n", err)
		return 2
	}
	repeatFixed = cmp.Or(repeatFixed, repeat)
	if repeat < 1 || repeatFixed < 1 || cfg.Parallel < 1 {
		fmt.Fprintln(stderr, "rollout: -repeat, -repeat-fixed and -parallel must be at least 1")
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
	var jobs []rollout.Job
	for _, c := range cells {
		for _, s := range usable {
			n := repeat
			if s.MaxStop == nil && s.OutsideModel == nil {
				n = repeatFixed
			}
			for rep := 1; rep <= n; rep++ {
				jobs = append(jobs, rollout.Job{Scenario: s, Cell: c, Rep: rep})
			}
		}
	}
	results, runErr := r.RunJobs(ctx, jobs)
	claims := rollout.ClaimsFor(usable)
	rows := rollout.Summarize(results, claims)
	checks := rollout.Checks(rows)
	report := rollout.Report{Rows: rows, Checks: checks, Drains: rollout.DrainStats(results, claims), Results: results}
	err = writeReport(stdout, report, asJSON, drainTable)
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
	if anyFailed(checks) {
		status = 1
	}
	if errors.Is(runErr, context.Canceled) {
		status = 130
	}
	return status
}

// printReport prints the table, or the drain table, of a saved JSON report, its verdicts read
// anew from its runs when it has them. The exit status says whether its checks held, as after a
// run.
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
	if len(report.Results) > 0 {
		// The runs are what was measured; the verdicts are this version's reading of them.
		claims := rollout.ClaimsFor(rollout.Scenarios())
		report.Rows = rollout.Summarize(report.Results, claims)
		report.Checks = rollout.Checks(report.Rows)
		report.Drains = rollout.DrainStats(report.Results, claims)
	}
	if err := writeReport(stdout, report, false, drainTable); err != nil {
		fmt.Fprintf(stderr, "rollout: writing the report: %v\n", err)
		return 1
	}
	if anyFailed(report.Checks) {
		return 1
	}
	return 0
}

// writeReport writes the JSON report, or the drain table (Markdown) and the checks, or the full
// table and the checks; after either table, how busy the machine was.
func writeReport(w io.Writer, report rollout.Report, asJSON, drainTable bool) error {
	var err error
	switch {
	case asJSON:
		return rollout.WriteJSON(w, report)
	case drainTable:
		err = rollout.WriteDrainTable(w, report.Drains)
		if err == nil {
			_, err = fmt.Fprintln(w) // Markdown: the checks are a paragraph of their own
		}
		if err == nil {
			err = rollout.WriteChecks(w, report.Checks)
		}
	default:
		err = rollout.WriteTable(w, report.Rows, report.Checks)
	}
	if err != nil {
		return err
	}
	return writeMachine(w, report.Results, report.Checks)
}

// anyFailed says whether a check failed for real (a noisy one does not count).
func anyFailed(checks []rollout.Check) bool {
	for _, c := range checks {
		if !c.OK && !c.Noisy {
			return true
		}
	}
	return false
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

// writeMachine says how busy the machine was during the runs: the load average at their ends
// and how late the harness's own timers fired, and how many runs were too noisy to time; and,
// when a check is noisy, what that means.
func writeMachine(w io.Writer, results []rollout.Result, checks []rollout.Check) error {
	if len(results) == 0 {
		return nil
	}
	var load, late float64
	noisy := 0
	for _, r := range results {
		load = max(load, r.Load1)
		late = max(late, float64(r.TimerLate))
		if r.Noisy {
			noisy++
		}
	}
	_, err := fmt.Fprintf(w, "\nmachine: %d CPUs, load average up to %.1f at the end of a run, the harness's timers up to %.0fms late; %d of %d runs too busy to time (noisy)\n",
		runtime.NumCPU(), load, late*1000, noisy, len(results))
	for _, c := range checks {
		if c.Noisy && err == nil {
			_, err = fmt.Fprintln(w, "noisy: the cuts, client timeouts and stop times of those runs are not held against drainit, nor what was lost after an adaptive drain the harness's own stall ended; run again on a quiet machine for a verdict on them")
			break
		}
	}
	return err
}

func topologyNames() []string {
	var out []string
	for _, t := range rollout.Topologies() {
		out = append(out, t.Name)
	}
	return out
}

// parseCells makes the cells: each propagation delay and each topology, at each rate (or at the
// load of -rate when rates is empty).
func parseCells(props, topologies, rates string) ([]rollout.Cell, error) {
	delays, err := parseDurations(props)
	if err != nil {
		return nil, fmt.Errorf("-propagation: %w", err)
	}
	rs := []float64{0}
	if strings.TrimSpace(rates) != "" {
		rs = nil
		for _, f := range strings.Split(rates, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil || v <= 0 {
				return nil, fmt.Errorf("-rates: %q: not a positive number of new connections a second", f)
			}
			rs = append(rs, v)
		}
	}
	var tops []rollout.Topology
	if strings.TrimSpace(topologies) != "" {
		for _, name := range strings.Split(topologies, ",") {
			t, err := rollout.LookupTopology(strings.TrimSpace(name))
			if err != nil {
				return nil, fmt.Errorf("-topologies: %w", err)
			}
			tops = append(tops, t)
		}
	}
	var cells []rollout.Cell
	for _, rate := range rs {
		for _, p := range delays {
			cells = append(cells, rollout.Cell{Propagation: p, Rate: rate})
		}
		for _, t := range tops {
			cells = append(cells, rollout.TopologyCell(t, rate))
		}
	}
	return cells, nil
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
