package main

import (
	"cmp"
	"fmt"
	"strings"
	"time"
)

// metricKind says how a value is printed: seconds or bytes.
type metricKind int

const (
	metricTime metricKind = iota
	metricBytes
)

type targetKind int

const (
	targetNone  targetKind = iota
	targetAbs              // value ≤ limit
	targetRatio            // value ≤ limit × the reference init's value
)

// target is one of the goals for drainit.
type target struct {
	kind  targetKind
	limit float64
	ref   string // targetRatio: the init the ratio is to (a column's name)
	text  string
}

// verdict says whether drainit's value v meets the target, given the reference init's value;
// ok is false when it cannot be told (a ratio target without the reference's value). A ratio
// target's verdict shows the ratio.
func (t target) verdict(v, ref float64, haveRef bool) (string, bool) {
	limit := t.limit
	switch t.kind {
	case targetAbs:
	case targetRatio:
		if !haveRef || ref <= 0 {
			return "", false
		}
		limit *= ref
	default:
		return "", false
	}
	out := "pass"
	if v > limit {
		out = "**miss**"
	}
	if t.kind == targetRatio {
		out += fmt.Sprintf(" (%.2f×)", v/ref)
	}
	return out, true
}

// row is one line of the results table. floor is the Go floor for it: the mininit mode that
// does the least any Go init must do for that measurement.
type row struct {
	key    string
	label  string
	kind   metricKind
	target target
	floor  string
}

const mib = 1 << 20

// The reference inits (bench/mininit), by column name.
const (
	floorEarly   = "mininit -early"   // registers the 15 signals that would end or stop a Go init
	floorForward = "mininit -forward" // forwards every signal drainit catches and reaps: a working init
	floorBare    = "mininit"          // ForkExec and wait4, nothing else
)

func tableRows(orphans int) []row {
	startup := target{targetRatio, 1.1, floorEarly, "≤ 1.1× Go floor"}
	return []row{
		{"start50", "start-up overhead p50", metricTime, startup, floorEarly},
		{"start90", "start-up overhead p90", metricTime, target{}, floorEarly},
		{"toapp50", "launch to the app running p50", metricTime, startup, floorEarly},
		{"rss", "idle RSS (VmRSS)", metricBytes, target{}, floorForward},
		{"rssanon", "idle RSS, anonymous (RssAnon)", metricBytes, target{targetAbs, 1 * mib, "", "≤ 1.0 MiB"}, floorForward},
		{"sig50", "SIGUSR1 forwarding latency p50", metricTime, target{targetRatio, 1.1, floorForward, "≤ 1.1× Go floor"}, floorForward},
		{"sig99", "SIGUSR1 forwarding latency p99", metricTime, target{}, floorForward},
		{"reap", fmt.Sprintf("reap %d orphans (median)", orphans), metricTime, target{targetRatio, 1.1, "tini", "≤ 1.1× tini"}, floorForward},
		{"reapcpu", "init's CPU time while reaping (median)", metricTime, target{}, floorForward},
		{"size", "binary size", metricBytes, target{targetAbs, 6 * mib, "", "≤ 6 MiB"}, floorBare},
	}
}

// column is one init's results. A missing key in vals is a measurement that was not made or
// failed (notes says why).
type column struct {
	name    string
	version string
	linkage string
	ref     bool // a reference point, not a competitor: shown in its own table
	vals    map[string]float64
}

// results is everything one run found, ready to print.
type results struct {
	date                     time.Time
	kernel, cpu, goVersion   string
	cpus                     int
	ns                       string
	load0, load1             string // /proc/loadavg's 1-minute load at the start and before reaping
	quick                    bool
	startRounds, sigRounds   int
	reapRounds, orphans      int
	rssLaunches              int
	bareStart50, bareStart90 float64
	direct50, direct99       float64
	cols                     []*column
	entry                    string // how the drainit measured was linked: with its entry point or not
	skipped                  []string
	notes                    []string
	control                  *controlResults // the control server's answers under a slow client
}

func (r *results) col(name string) *column {
	for _, c := range r.cols {
		if c.name == name {
			return c
		}
	}
	return nil
}

// fmt prints one of c's values, or "–" when it was not measured.
func (c *column) fmt(key string, kind metricKind) string {
	if v, ok := c.vals[key]; ok {
		return fmtValue(kind, v)
	}
	return "–"
}

// fmtValue prints a value with a unit that suits its size.
func fmtValue(kind metricKind, v float64) string {
	switch kind {
	case metricBytes:
		if v >= mib {
			return fmt.Sprintf("%.2f MiB", v/mib)
		}
		return fmt.Sprintf("%.0f KiB", v/1024)
	default:
		a := v
		if a < 0 {
			a = -a
		}
		switch {
		case a >= 1:
			return fmt.Sprintf("%.2f s", v)
		case a >= 1e-3:
			return fmt.Sprintf("%.2f ms", v*1e3)
		case a >= 10e-6:
			return fmt.Sprintf("%.0f µs", v*1e6)
		default:
			return fmt.Sprintf("%.1f µs", v*1e6)
		}
	}
}

// fmtCell prints a value and, when tini's is known and both are positive, the ratio to it.
func fmtCell(kind metricKind, v, tini float64, haveTini bool) string {
	s := fmtValue(kind, v)
	if haveTini && tini > 0 && v > 0 {
		s += fmt.Sprintf(" (%.2f×)", v/tini)
	}
	return s
}

// mainTable is the table of the README: drainit, its Go floor, and the other inits, with the
// targets.
func (r *results) mainTable() string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	var others []*column
	for _, c := range r.cols {
		if !c.ref && c.name != "drainit" {
			others = append(others, c)
		}
	}
	tini := r.col("tini")
	drainit := r.col("drainit")
	w("| | drainit | Go floor |")
	for _, c := range others {
		w(" %s |", c.name)
	}
	w(" target | drainit |\n|---|---|---|")
	for range others {
		w("---|")
	}
	w("---|---|\n")
	cell := func(c *column, key string, kind metricKind, tv float64, haveTini bool) string {
		if c == nil {
			return "–"
		}
		v, ok := c.vals[key]
		if !ok {
			return "–"
		}
		return fmtCell(kind, v, tv, haveTini)
	}
	for _, rw := range tableRows(r.orphans) {
		tv, haveTini := 0.0, false
		if tini != nil {
			tv, haveTini = tini.vals[rw.key]
		}
		floor := "–"
		if fc := r.col(rw.floor); fc != nil {
			if v, ok := fc.vals[rw.key]; ok {
				floor = fmtValue(rw.kind, v)
				if mode := strings.TrimSpace(strings.TrimPrefix(rw.floor, floorBare)); mode != "" {
					floor += " (" + mode + ")"
				}
			}
		}
		w("| %s | %s | %s |", rw.label, cell(drainit, rw.key, rw.kind, tv, haveTini), floor)
		for _, c := range others {
			w(" %s |", cell(c, rw.key, rw.kind, tv, haveTini))
		}
		verdict := ""
		if drainit != nil {
			if v, ok := drainit.vals[rw.key]; ok {
				ref, haveRef := 0.0, false
				if rc := r.col(rw.target.ref); rc != nil {
					ref, haveRef = rc.vals[rw.key]
				}
				var told bool
				if verdict, told = rw.target.verdict(v, ref, haveRef); !told && rw.target.kind == targetRatio {
					verdict = fmt.Sprintf("n/a (no %s)", rw.target.ref)
				}
			}
		}
		w(" %s | %s |\n", cmp.Or(rw.target.text, "–"), verdict)
	}
	return b.String()
}

// markdown renders the results as the README's benchmark section.
func (r *results) markdown() string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	mode := "full run"
	if r.quick {
		mode = "**quick run: indicative only**"
	}
	launcher := "`unshare --pid --fork --mount-proc --kill-child INIT -- APP`"
	if r.ns == "clone" {
		launcher = "`clone(CLONE_NEWPID)` straight from the benchmark (`-ns clone`)"
	}
	w("## Benchmark\n\n")
	w("`make bench` (`go run ./bench`, `-quick` for a short run) runs drainit and the usual container\n")
	w("inits side by side, each as PID 1 of a fresh PID namespace (%s), interleaved\n", launcher)
	w("in a new random order every round. Ratios in the cells are to tini; the verdict's ratio is to\n")
	w("the target's reference. The Go floor is `bench/mininit`, the least a Go init can do (below).\n\n")
	w("Measured %s (%s) on Linux %s, %s, %d CPUs, %s: %d start-ups, %d signals, %d reaping rounds\n",
		r.date.Format("2006-01-02 15:04 MST"), mode, r.kernel, r.cpu, r.cpus, r.goVersion, r.startRounds, r.sigRounds, r.reapRounds)
	w("per init. Load average (1 min): %s at the start, %s before the reaping rounds (which raise it\n", r.load0, r.load1)
	w("themselves). Other work on the machine moves every number, the signal latencies most:\n")
	w("compare columns within one run.\n\n")
	b.WriteString(r.mainTable())
	w("\n")
	w("- Go floor: `bench/mininit`, a Go init of nothing but the runtime, os/signal and syscall. For\n")
	w("  start-up, `-early`: it registers only the 15 signals any Go init must catch before its app runs\n")
	w("  (HUP, INT, QUIT, TERM, STKFLT, and ILL, TRAP, ABRT, BUS, FPE, SEGV, SYS when sent, end a Go\n")
	w("  program, TSTP, TTIN, TTOU stop it), then ForkExecs the\n")
	w("  app and waits. For memory and signals, `-forward`: it registers every signal drainit catches,\n")
	w("  forwards them and reaps, and nothing else. For size, plain `mininit`.\n")
	w("- Start-up overhead: the init running `/bin/true`, minus `/bin/true` alone as PID 1 (p50 %s,\n",
		fmtValue(metricTime, r.bareStart50))
	w("  p90 %s), each timed from the benchmark's fork to `wait4` returning; p90 is p90 minus p90.\n",
		fmtValue(metricTime, r.bareStart90))
	w("  Launch to the app running: from the fork to the app's first instruction (`benchapp stamp`\n")
	w("  reads the clock), minus the same with the app alone; what a container's app waits for.\n")
	w("- Idle RSS: of the init once the app is up, after a settling pause; the median of %d launches\n", r.rssLaunches)
	w("  of each init (one launch's RssAnon moves by up to ±60 KiB from one start to the next).\n")
	w("  VmRSS counts the mapped pages of the binary (and of libc for the dynamically linked inits);\n")
	w("  on this kernel that is nearly the whole file, so it is about the binary's size plus RssAnon,\n")
	w("  the init's own memory (heap, thread stacks, the runtime's structures), which the target is on.\n")
	w("- SIGUSR1 latency: `kill(init, SIGUSR1)` to the app's answer on a pipe. The app takes the\n")
	w("  signal from a signalfd and writes one byte; sent straight to the app (no init) the round\n")
	w("  trip is p50 %s, p99 %s: the rest is the init's forwarding.\n", fmtValue(metricTime, r.direct50), fmtValue(metricTime, r.direct99))
	w("- Reaping: the app leaves %d orphans blocked on a pipe (the init's children, made beforehand);\n", r.orphans)
	w("  the clock runs from closing the pipe, which releases them all at once, until the init has no\n")
	w("  child left but the app, which stays alive; median of %d rounds. Most of it is the kernel's exit\n", r.reapRounds)
	w("  work, alike for every init, and it varies with the machine's load: see the spread below. The\n")
	w("  CPU row is the init's own share (schedstat of all its threads), noisier still: for an init\n")
	w("  that learns of exits by SIGCHLD through os/signal (drainit, `mininit -forward`) it is bimodal,\n")
	w("  one wake-up reaping many or each child waking three threads (bench/STARTUP.md).\n")
	w("- Binary size is the file as installed (drainit: built with `CGO_ENABLED=0 go build -trimpath\n")
	w("  -ldflags='-s -w'`")
	if r.entry != "" {
		w(", %s", r.entry)
	}
	w(").")
	var dyn, stat []string
	for _, c := range r.cols {
		if c.linkage == "" || c.ref {
			continue
		}
		if strings.HasPrefix(c.linkage, "static") {
			stat = append(stat, c.name)
		} else {
			dyn = append(dyn, fmt.Sprintf("%s (%s)", c.name, c.linkage))
		}
	}
	if len(dyn) > 0 {
		w(" Dynamically linked, so an image needs libc too: %s.", strings.Join(dyn, ", "))
	}
	if len(stat) > 0 {
		w(" Static: %s.", strings.Join(stat, ", "))
	}
	w("\n")
	var versions []string
	for _, c := range r.cols {
		if c.version != "" {
			versions = append(versions, fmt.Sprintf("%s: `%s`", c.name, c.version))
		}
	}
	if len(versions) > 0 {
		w("- Versions: %s.\n", strings.Join(versions, "; "))
	}
	for _, s := range r.skipped {
		w("- Skipped: %s.\n", s)
	}
	for _, n := range r.notes {
		w("- Note: %s\n", n)
	}

	w("\nThe detail, every init and the reference points. Start-up (p50, each over the same with the\n")
	w("app alone as PID 1) is split in two: from launching the namespace to the app running\n")
	w("(`benchapp stamp` reads the clock first thing), and from there to the namespace's end. RSS is\n")
	w("split into anonymous memory and mapped pages of the binary. `mininit` (`bench/mininit`) is the\n")
	w("floor for a Go init: it only ForkExecs the app and waits; `-early` first registers the 15 signals\n")
	w("that would end or stop it; `-notify` registers every signal drainit catches; `-forward` also\n")
	w("forwards them and reaps, and nothing else.\n\n")
	w("| | start-up overhead | to the app running | app exit to the end | idle RSS: anon + file | SIGUSR1 p50 | reap: median (min–max) |\n")
	w("|---|---|---|---|---|---|---|\n")
	for _, c := range r.cols {
		w("| %s |", c.name)
		for _, k := range []string{"start50", "toapp50", "after50"} {
			w(" %s |", c.fmt(k, metricTime))
		}
		w(" %s + %s |", c.fmt("rssanon", metricBytes), c.fmt("rssfile", metricBytes))
		reap := c.fmt("reap", metricTime)
		if _, ok := c.vals["reapmin"]; ok {
			reap += fmt.Sprintf(" (%s–%s)", c.fmt("reapmin", metricTime), c.fmt("reapmax", metricTime))
		}
		w(" %s | %s |\n", c.fmt("sig50", metricTime), reap)
	}
	b.WriteString(r.control.markdown())
	return b.String()
}
