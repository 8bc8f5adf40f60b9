package rollout

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"
)

// Seconds is a duration in seconds, as the JSON report writes it.
type Seconds float64

func seconds(d time.Duration) Seconds {
	return Seconds(math.Round(d.Seconds()*1000) / 1000)
}

// Duration converts back.
func (s Seconds) Duration() time.Duration { return time.Duration(float64(s) * float64(time.Second)) }

// Result is one run: one stop of one pod under load. Times are seconds since the deletion.
type Result struct {
	Scenario          string       `json:"scenario"`
	Name              string       `json:"name"`
	Propagation       Seconds      `json:"propagation_seconds"`
	Rep               int          `json:"run"`
	Requests          int          `json:"requests"`
	NewConnRequests   int          `json:"new_conn_requests"`
	KeepAliveRequests int          `json:"keep_alive_requests"`
	Failed            int          `json:"failed"`
	ByKind            map[Kind]int `json:"failed_by_kind"`
	// Retried counts keep-alive requests retried on a fresh connection; their retries' outcomes
	// are what Failed counts.
	Retried int `json:"retried"`
	// Cut counts requests cut in flight: a pod had had them for at least CutAfter and closed the
	// connection without answering.
	Cut int `json:"cut"`
	// Dropped counts requests a pod closed the connection on unanswered as they arrived (read
	// within CutAfter, or unread); the client's failure or retry counts them too.
	Dropped int `json:"dropped"`
	// RoutedBefore and RoutedAfter count the new connections the balancer sent to the stopped pod
	// before and after the deletion (after: until the propagation delay was over); behind pooling
	// L7 proxies (Scenario.Pooled), the requests, and PoolDialsAfter the connections the proxies
	// opened to the pod after the deletion (nil for L4 balancers), which are all it saw as new.
	RoutedBefore   int     `json:"routed_before_delete"`
	RoutedAfter    int     `json:"routed_after_delete"`
	PoolDialsAfter *int    `json:"pool_connections_after_delete,omitempty"`
	Removed        Seconds `json:"endpoint_removed_seconds"`
	// TCPSockets is how many TCP sockets the host's network namespace, which the pods share,
	// held at the deletion, TIME_WAIT included (-1: unknown). An adaptive drain outside a network
	// namespace of its own scans that table on each poll, and a big one makes it poll less often.
	TCPSockets int `json:"tcp_sockets"`
	// PreStop is when the kubelet stopped waiting for the preStop hook (nil: no hook).
	PreStop      *Seconds `json:"prestop_end_seconds,omitempty"`
	PreStopError string   `json:"prestop_error,omitempty"`
	// Signal is when the kubelet sent the stop signal to PID 1 (nil: PID 1 was gone before).
	Signal *Seconds `json:"stop_signal_seconds,omitempty"`
	// Stop is the pod stop duration: from the deletion until PID 1 was gone.
	Stop       Seconds `json:"stop_seconds"`
	Killed     bool    `json:"sigkill"`
	ExitStatus int     `json:"exit_status"`
	// Topology names the proxies in front of the pods ("": one, delayed Propagation, which is
	// otherwise the last proxy's delay); Rate is the cell's new connections a second at the
	// stopped pod (0: the load was Config.Rate).
	Topology string  `json:"topology,omitempty"`
	Rate     float64 `json:"rate,omitempty"`
	// OfferedRate is the new-connection requests a second the load was set to, all proxies
	// together; AchievedRate what the generator started (a busy machine starts them late); PodRate
	// the new connections a second the proxies sent the stopped pod in the second before the
	// deletion (behind pooling proxies, the requests, keep-alive clients' included).
	OfferedRate  float64 `json:"offered_rate"`
	AchievedRate float64 `json:"achieved_rate"`
	PodRate      float64 `json:"pod_rate"`
	// LastRouted is when the last new connection (behind pooling proxies, request) was sent to
	// the stopped pod (nil: none after the deletion).
	LastRouted *Seconds `json:"last_routed_seconds,omitempty"`
	// DrainCPU is drainit's CPU time from the deletion to the end of its drain, as a fraction of
	// one core (nil: not drainit, or no preStop to mark the drain's end).
	DrainCPU *float64 `json:"drain_cpu_fraction,omitempty"`
	// TimerLate is how late the harness's own 10 ms timers fired at worst during the run, and
	// Load1 the load average when it ended: a machine too busy to time the run (Noisy, when
	// TimerLate exceeds Config.CutAfter) makes timing claims unreliable (see Noisy).
	TimerLate Seconds `json:"timer_late_seconds"`
	Load1     float64 `json:"load1"`
	Noisy     bool    `json:"noisy,omitempty"`
	// Drain is what drainit logged about its adaptive drain (nil: not an adaptive drain).
	Drain    *DrainLog   `json:"adaptive_drain,omitempty"`
	Failures []FailureAt `json:"failures,omitempty"`
	Drops    []DropAt    `json:"drops,omitempty"`
	// Tail is the end of the stopped pod's output, for a test's failure message.
	Tail string `json:"-"`
}

// FailureAt is a failed request, with times since the deletion.
type FailureAt struct {
	Mode    Mode      `json:"mode"`
	Kind    Kind      `json:"kind"`
	Sent    Seconds   `json:"sent_seconds"`
	At      Seconds   `json:"at_seconds"`
	Retried bool      `json:"retried,omitempty"`
	Seen    EventKind `json:"balancer_saw,omitempty"`
	Err     string    `json:"error"`
}

// DropAt is a request a pod closed the connection on without answering, with times since the
// deletion.
type DropAt struct {
	Kind      EventKind `json:"kind"`              // cut, dropped or unread
	Delivered Seconds   `json:"delivered_seconds"` // the request reached the pod
	At        Seconds   `json:"at_seconds"`        // the pod closed the connection
	Client    string    `json:"client"`
	Endpoint  string    `json:"endpoint"`
}

// cell is the cell the run was in.
func (r Result) cell() Cell {
	return Cell{Propagation: r.Propagation.Duration(), Topology: r.Topology, Rate: r.Rate}
}

// realFailures are the run's failed requests that a busy machine does not explain: all of them,
// but in a noisy run the timeouts (the harness's clients time out when the harness stalls),
// and everything when an adaptive drain ended on a silence the harness made (stalled for half
// of it or more, sending the pod nothing): drainit saw no traffic because there was none.
func (r Result) realFailures() int {
	switch {
	case !r.Noisy:
		return r.Failed
	case r.stalledSilence(), r.frozen():
		return 0
	}
	return r.Failed - r.ByKind[Timeout]
}

// FrozenLate is how late the harness's timers must have been for a run to say nothing at all:
// a machine stopped for a second or more (a paused VM, a frozen cgroup) stopped the harness's
// clocks and clients with the pods, and the kubelet simulator's grace period ran out meanwhile.
const FrozenLate = time.Second

// frozen: the run's timers were FrozenLate late or more (see FrozenLate): whatever it lost, a
// SIGKILL included, is the machine's doing.
func (r Result) frozen() bool { return r.Noisy && r.TimerLate.Duration() >= FrozenLate }

// stalledSilence: the adaptive drain ended on a silence the harness was stalled for half of.
func (r Result) stalledSilence() bool {
	d := r.Drain
	return d != nil && d.Silence > 0 && 2*d.SilenceStalled >= d.Silence
}

// Row is one line of the table: a scenario in one cell, over its repetitions.
type Row struct {
	Scenario    string       `json:"scenario"`
	Name        string       `json:"name"`
	Propagation Seconds      `json:"propagation_seconds"`
	Topology    string       `json:"topology,omitempty"`
	Rate        float64      `json:"rate,omitempty"`
	Runs        int          `json:"runs"`
	Requests    int          `json:"requests"`
	Failed      int          `json:"failed"`
	ByKind      map[Kind]int `json:"failed_by_kind"`
	Retried     int          `json:"retried"`
	Cut         int          `json:"cut"`
	Dropped     int          `json:"dropped"`
	// FirstFailure and LastFailure bound the failures' times (nil without failures).
	FirstFailure *Seconds `json:"first_failure_seconds,omitempty"`
	LastFailure  *Seconds `json:"last_failure_seconds,omitempty"`
	StopMin      Seconds  `json:"stop_min_seconds"`
	StopMax      Seconds  `json:"stop_max_seconds"`
	Killed       int      `json:"sigkilled_runs"`
	Expect       string   `json:"expect,omitempty"` // "loss", "none" or ""
	// MaxStop is the longest stop duration the scenario claims (zero: no claim); OverStop counts
	// the runs that took longer.
	MaxStop  Seconds `json:"max_stop_seconds,omitempty"`
	OverStop int     `json:"over_max_stop_runs,omitempty"`
	// MedianStop is the median stop duration the scenario claims (zero: no claim); OverMedian
	// says the runs' median was longer.
	MedianStop Seconds `json:"median_stop_seconds,omitempty"`
	OverMedian bool    `json:"over_median_stop,omitempty"`
	// Outside says why the scenario claims nothing in this cell (its model does not cover it).
	Outside string `json:"outside_model,omitempty"`
	// NoisyRuns counts the runs the machine was too busy to time (Result.Noisy); NoisyFailed,
	// NoisyCut, NoisyOver and NoisyKilled the failed requests, cuts, stops over the bound and
	// SIGKILLs in them that the machine explains (see Summarize).
	NoisyRuns   int  `json:"noisy_runs,omitempty"`
	NoisyFailed int  `json:"noisy_failed,omitempty"`
	NoisyCut    int  `json:"noisy_cut,omitempty"`
	NoisyOver   int  `json:"noisy_over_max_stop_runs,omitempty"`
	NoisyKilled int  `json:"noisy_sigkilled_runs,omitempty"` // in runs the machine froze (FrozenLate)
	OK          bool `json:"ok"`                             // the expectation and the stop bound held (true without them)
	// Noisy: the claim failed only in noisy runs and only on what timing decides (a cut, a
	// client's timeout, a stop over its bound), so the row says nothing about drainit.
	Noisy bool `json:"noisy,omitempty"`
}

// cellString is the row's cell as the tables show it.
func (r Row) cellString() string {
	return Cell{Propagation: r.Propagation.Duration(), Topology: r.Topology}.String()
}

// Claim is what a scenario must show at a propagation delay.
type Claim struct {
	Expect     Expectation
	MaxStop    time.Duration // the longest pod stop duration; zero: no bound
	MedianStop time.Duration // the median pod stop duration; zero: no bound
	Outside    string        // why the scenario claims nothing here (its model does not cover it)
}

// Claim is what s must show in cell c: its expectation at the (last) propagation delay and, for
// the adaptive drains, its bound on the stop duration; none where it is outside its model.
func (s Scenario) Claim(c Cell) Claim {
	if s.OutsideModel != nil {
		if why := s.OutsideModel(c); why != "" {
			return Claim{Outside: why}
		}
	}
	cl := Claim{Expect: s.Expect(c.Propagation)}
	if s.MaxStop != nil {
		cl.MaxStop = s.MaxStop(c)
	}
	if s.MedianStop != nil {
		cl.MedianStop = s.MedianStop(c)
	}
	return cl
}

// byRow groups results by scenario and propagation delay, in the order each pair first appears:
// a row of the table (Summarize) and a line of the drain comparison (DrainStats) each fold one
// group.
func byRow(results []Result) [][]Result {
	type key struct {
		scenario    string
		propagation Seconds
		topology    string
		rate        float64
	}
	var groups [][]Result
	index := map[key]int{}
	for _, res := range results {
		k := key{res.Scenario, res.Propagation, res.Topology, res.Rate}
		i, ok := index[k]
		if !ok {
			i = len(groups)
			index[k] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], res)
	}
	return groups
}

// Summarize folds results into rows, in the order scenarios and cells first appear. claim gives
// each row's claim (nil: none). A claim that fails only on what a noisy run forgives (cuts,
// timeouts and stop times in it, Result.realFailures, Result.frozen; docs/benchmarks.md, "A
// machine too busy to time a run") makes the row Noisy rather than failed.
func Summarize(results []Result, claim func(scenario string, c Cell) Claim) []Row {
	var rows []Row
	for _, group := range byRow(results) {
		first := group[0]
		r := Row{Scenario: first.Scenario, Name: first.Name, Propagation: first.Propagation, Topology: first.Topology,
			Rate: first.Rate, ByKind: map[Kind]int{}, StopMin: first.Stop, StopMax: first.Stop}
		for _, res := range group {
			r.Runs++
			if res.Noisy {
				r.NoisyRuns++
			}
			r.Requests += res.Requests
			r.Failed += res.Failed
			for k, n := range res.ByKind {
				r.ByKind[k] += n
			}
			r.Retried += res.Retried
			r.Cut += res.Cut
			r.Dropped += res.Dropped
			r.StopMin = min(r.StopMin, res.Stop)
			r.StopMax = max(r.StopMax, res.Stop)
			if res.Killed {
				r.Killed++
			}
			for _, f := range res.Failures {
				at := f.At
				if r.FirstFailure == nil || at < *r.FirstFailure {
					r.FirstFailure = &at
				}
				if r.LastFailure == nil || at > *r.LastFailure {
					r.LastFailure = &at
				}
			}
		}
		r.OK = true
		if claim != nil {
			c := claim(r.Scenario, first.cell())
			r.Outside = c.Outside
			hard := false // the claim failed for real, not only in noisy runs on timing
			switch c.Expect {
			case ExpectLoss:
				r.Expect, hard = "loss", r.Failed == 0
			case ExpectNoLoss:
				r.Expect = "none"
				for _, res := range group {
					if res.Noisy {
						r.NoisyFailed += res.Failed - res.realFailures()
						r.NoisyCut += res.Cut
					}
					if res.Killed {
						if res.frozen() {
							r.NoisyKilled++
						} else {
							hard = true
						}
					}
				}
				hard = hard || r.Failed > r.NoisyFailed || r.Cut > r.NoisyCut
			}
			if c.MaxStop > 0 {
				r.MaxStop = seconds(c.MaxStop)
				for _, res := range group {
					if res.Stop > r.MaxStop {
						r.OverStop++
						if res.Noisy {
							r.NoisyOver++
						}
					}
				}
				hard = hard || r.OverStop > r.NoisyOver
			}
			if c.MedianStop > 0 {
				r.MedianStop = seconds(c.MedianStop)
				stops := make([]Seconds, len(group))
				for i, res := range group {
					stops[i] = res.Stop
				}
				r.OverMedian = seconds(Median(stops).Duration()) > r.MedianStop
				hard = hard || r.OverMedian
			}
			soft := (r.Expect == "none" && (r.NoisyFailed > 0 || r.NoisyCut > 0 || r.NoisyKilled > 0)) || r.NoisyOver > 0
			r.OK = !hard && !soft
			r.Noisy = !hard && soft
		}
		rows = append(rows, r)
	}
	return rows
}

// ClaimsFor returns the claim function of Summarize for these scenarios.
func ClaimsFor(scenarios []Scenario) func(string, Cell) Claim {
	return func(key string, c Cell) Claim {
		for _, s := range scenarios {
			if s.Key == key {
				return s.Claim(c)
			}
		}
		return Claim{}
	}
}

// Check is one verdict over the rows. Noisy: it failed only in runs the machine was too busy
// to time, on what timing decides (see Summarize); it says nothing about drainit either way.
type Check struct {
	What  string `json:"what"`
	OK    bool   `json:"ok"`
	Noisy bool   `json:"noisy,omitempty"`
}

// Checks are the claims the harness exists to show: scenarios that stop the app at once lose
// requests once propagation takes 1 s or more (else the harness is blind), a graceful app that
// drains at least as long as propagation loses none, is never cut and never SIGKILLed, and a
// scenario with a bound on its stop duration (the adaptive drain) stays within it.
func Checks(rows []Row) []Check {
	var out []Check
	var lossRows, lossOK, stops, failed, cut, killed, noisyFailed, noisyCut, noisyKilled int
	var noLossRows int
	var bounded, over, noisyOver, medianCells, medianOver int
	var worst, worstMedian *Row
	var outside []string
	for i, r := range rows {
		if r.Outside != "" {
			where := r.cellString()
			if r.Rate > 0 {
				where += fmt.Sprintf(" @%.0f/s", r.Rate)
			}
			outside = append(outside, fmt.Sprintf("%s at %s", r.Scenario, where))
		}
		if r.MedianStop > 0 {
			medianCells++
			if r.OverMedian {
				medianOver++
				if worstMedian == nil || r.MedianStop < worstMedian.MedianStop {
					worstMedian = &rows[i]
				}
			}
		}
		if r.MaxStop > 0 {
			bounded += r.Runs
			over += r.OverStop
			noisyOver += r.NoisyOver
			if worst == nil || r.StopMax-r.MaxStop > worst.StopMax-worst.MaxStop {
				worst = &rows[i]
			}
		}
		switch r.Expect {
		case "loss":
			lossRows++
			if r.OK {
				lossOK++
			}
		case "none":
			noLossRows++
			stops += r.Runs
			failed += r.Failed
			cut += r.Cut
			killed += r.Killed
			noisyFailed += r.NoisyFailed
			noisyCut += r.NoisyCut
			noisyKilled += r.NoisyKilled
		}
	}
	if lossRows > 0 {
		out = append(out, Check{
			What: fmt.Sprintf("the harness sees the problem: %d of %d rows that stop the app at once with propagation >= 1s lost requests", lossOK, lossRows),
			OK:   lossOK == lossRows,
		})
	}
	if noLossRows > 0 {
		c := Check{What: fmt.Sprintf("drain >= propagation, graceful app: %d failed, %d cut, %d SIGKILLed in %d stops", failed, cut, killed, stops)}
		hard := failed > noisyFailed || cut > noisyCut || killed > noisyKilled
		c.OK = failed == 0 && cut == 0 && killed == 0
		if c.Noisy = !c.OK && !hard; c.Noisy {
			c.What += fmt.Sprintf(" (%d failed, %d cut and %d SIGKILLed, all in runs the machine was too busy to time: not counted)", noisyFailed, noisyCut, noisyKilled)
		} else if !c.OK {
			c.What += fmt.Sprintf(" (of which %d failed, %d cut and %d SIGKILLed in runs the machine was too busy to time)", noisyFailed, noisyCut, noisyKilled)
		}
		out = append(out, c)
	}
	if bounded > 0 {
		c := Check{What: fmt.Sprintf("adaptive drains stop within their bounds (quiet 1s: propagation + 1.5s; auto: last proxy's delay + %s from %d new connections/s): %d of %d stops over (worst: %s at %s, %.2fs of %.2fs)",
			fmtSeconds(seconds(AutoFastSlack)), AutoFastRate, over, bounded, worst.Scenario, worst.cellString(),
			float64(worst.StopMax), float64(worst.MaxStop)), OK: over == 0}
		if c.Noisy = over > 0 && over == noisyOver; c.Noisy {
			c.What += fmt.Sprintf(" (all %d in runs the machine was too busy to time: not counted)", noisyOver)
		} else if noisyOver > 0 {
			c.What += fmt.Sprintf(" (%d of them in runs the machine was too busy to time)", noisyOver)
		}
		out = append(out, c)
	}
	if medianCells > 0 {
		c := Check{What: fmt.Sprintf("the automatic quiet period's median stop below %d new connections/s within the last proxy's delay + %s: %d of %d cells over",
			AutoFastRate, fmtSeconds(seconds(AutoSlowSlack)), medianOver, medianCells), OK: medianOver == 0}
		if worstMedian != nil {
			c.What += fmt.Sprintf(" (e.g. %s at %s, bound %.2fs)", worstMedian.Scenario, worstMedian.cellString(), float64(worstMedian.MedianStop))
		}
		out = append(out, c)
	}
	if len(outside) > 0 {
		out = append(out, Check{What: fmt.Sprintf("no claim outside the model, results shown: %s", strings.Join(outside, "; ")), OK: true})
	}
	return out
}

// WriteTable writes rows as an aligned text table, then the checks.
func WriteTable(w io.Writer, rows []Row, checks []Check) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', tabwriter.AlignRight)
	// "other" (a failure the harness cannot name) only gets a column when there is one.
	var kinds []Kind
	for _, k := range Kinds() {
		if k != Other || anyOther(rows) {
			kinds = append(kinds, k)
		}
	}
	header := []string{"scenario", "propagation", "runs", "requests", "failed"}
	for _, k := range kinds {
		header = append(header, string(k))
	}
	header = append(header, "cut", "dropped", "failures at", "stop", "SIGKILL", "expect")
	// tabwriter aligns every column the same way: the names are padded here to read left-aligned.
	width := len(header[0])
	for _, r := range rows {
		width = max(width, len(r.Name))
	}
	header[0] = fmt.Sprintf("%-*s", width, header[0])
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	for _, r := range rows {
		prop := r.cellString()
		if r.Rate > 0 {
			prop += fmt.Sprintf(" @%.0f/s", r.Rate)
		}
		cells := []string{fmt.Sprintf("%-*s", width, r.Name), prop, fmt.Sprint(r.Runs), fmt.Sprint(r.Requests), fmt.Sprint(r.Failed)}
		for _, k := range kinds {
			cells = append(cells, fmt.Sprint(r.ByKind[k]))
		}
		at := "-"
		if r.FirstFailure != nil {
			at = fmt.Sprintf("%+.2fs..%+.2fs", float64(*r.FirstFailure), float64(*r.LastFailure))
		}
		stop := fmt.Sprintf("%.2fs", float64(r.StopMax))
		if r.Runs > 1 {
			stop = fmt.Sprintf("%.2f-%.2fs", float64(r.StopMin), float64(r.StopMax))
		}
		expect := r.Expect
		if r.MaxStop > 0 {
			// The stop bound is part of the claim: "none, stop<=2.5s".
			if expect != "" {
				expect += ", "
			}
			expect += "stop<=" + fmtSeconds(r.MaxStop)
		}
		switch {
		case r.Outside != "":
			expect = "outside the model"
		case expect == "":
			expect = "-"
		case r.OK:
			expect += " ok"
		case r.Noisy:
			expect += " noisy"
		default:
			expect += " FAIL"
		}
		cells = append(cells, fmt.Sprint(r.Cut), fmt.Sprint(r.Dropped), at, stop, fmt.Sprintf("%d/%d", r.Killed, r.Runs), expect)
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// Right alignment pads the first column too: drop that padding.
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		if _, err := io.WriteString(w, strings.TrimPrefix(line, "  ")); err != nil {
			return err
		}
	}
	return WriteChecks(w, checks)
}

// WriteChecks writes one line per check: "ok" or "FAIL", and what it checked.
func WriteChecks(w io.Writer, checks []Check) error {
	for _, c := range checks {
		verdict := "ok  "
		switch {
		case c.Noisy:
			verdict = "noisy"
		case !c.OK:
			verdict = "FAIL"
		}
		if _, err := fmt.Fprintf(w, "%s %s\n", verdict, c.What); err != nil {
			return err
		}
	}
	return nil
}

func anyOther(rows []Row) bool {
	for _, r := range rows {
		if r.ByKind[Other] > 0 {
			return true
		}
	}
	return false
}

func fmtSeconds(s Seconds) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", float64(s)), "0"), ".") + "s"
}

// Report is the JSON report.
type Report struct {
	Rows   []Row   `json:"rows"`
	Checks []Check `json:"checks"`
	// Drains is the stop duration at zero failures per scenario and delay (DrainStats).
	Drains  []DrainStat `json:"drains"`
	Results []Result    `json:"results"`
}

// WriteJSON writes the report as indented JSON.
func WriteJSON(w io.Writer, r Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
