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
	// before and after the deletion (after: until the propagation delay was over).
	RoutedBefore int     `json:"routed_before_delete"`
	RoutedAfter  int     `json:"routed_after_delete"`
	Removed      Seconds `json:"endpoint_removed_seconds"`
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
	// Drain is what drainit logged about its adaptive drain (nil: not an adaptive drain).
	Drain    *DrainLog   `json:"adaptive_drain,omitempty"`
	Failures []FailureAt `json:"failures,omitempty"`
	Drops    []DropAt    `json:"drops,omitempty"`
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

// Row is one line of the table: a scenario at one propagation delay, over its repetitions.
type Row struct {
	Scenario    string       `json:"scenario"`
	Name        string       `json:"name"`
	Propagation Seconds      `json:"propagation_seconds"`
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
	OK       bool    `json:"ok"` // the expectation and the stop bound held (true without them)
}

// Claim is what a scenario must show at a propagation delay.
type Claim struct {
	Expect  Expectation
	MaxStop time.Duration // the longest pod stop duration; zero: no bound
}

// Claim is what s must show at propagation delay p: its expectation and, for the adaptive drain,
// its bound on the stop duration.
func (s Scenario) Claim(p time.Duration) Claim {
	c := Claim{Expect: s.Expect(p)}
	if s.MaxStop != nil {
		c.MaxStop = s.MaxStop(p)
	}
	return c
}

// byRow groups results by scenario and propagation delay, in the order each pair first appears:
// a row of the table (Summarize) and a line of the drain comparison (DrainStats) each fold one
// group.
func byRow(results []Result) [][]Result {
	type key struct {
		scenario    string
		propagation Seconds
	}
	var groups [][]Result
	index := map[key]int{}
	for _, res := range results {
		k := key{res.Scenario, res.Propagation}
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

// Summarize folds results into rows, in the order scenarios and propagation delays first appear.
// claim gives each row's claim (nil: none).
func Summarize(results []Result, claim func(scenario string, p time.Duration) Claim) []Row {
	var rows []Row
	for _, group := range byRow(results) {
		first := group[0]
		r := Row{Scenario: first.Scenario, Name: first.Name, Propagation: first.Propagation,
			ByKind: map[Kind]int{}, StopMin: first.Stop, StopMax: first.Stop}
		for _, res := range group {
			r.Runs++
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
			c := claim(r.Scenario, r.Propagation.Duration())
			switch c.Expect {
			case ExpectLoss:
				r.Expect, r.OK = "loss", r.Failed > 0
			case ExpectNoLoss:
				r.Expect, r.OK = "none", r.Failed == 0 && r.Cut == 0 && r.Killed == 0
			}
			if c.MaxStop > 0 {
				r.MaxStop = seconds(c.MaxStop)
				for _, res := range group {
					if res.Stop > r.MaxStop {
						r.OverStop++
					}
				}
				r.OK = r.OK && r.OverStop == 0
			}
		}
		rows = append(rows, r)
	}
	return rows
}

// ClaimsFor returns the claim function of Summarize for these scenarios.
func ClaimsFor(scenarios []Scenario) func(string, time.Duration) Claim {
	return func(key string, p time.Duration) Claim {
		for _, s := range scenarios {
			if s.Key == key {
				return s.Claim(p)
			}
		}
		return Claim{}
	}
}

// Check is one verdict over the rows.
type Check struct {
	What string `json:"what"`
	OK   bool   `json:"ok"`
}

// Checks are the claims the harness exists to show: scenarios that stop the app at once lose
// requests once propagation takes 1 s or more (else the harness is blind), a graceful app that
// drains at least as long as propagation loses none, is never cut and never SIGKILLed, and a
// scenario with a bound on its stop duration (the adaptive drain) stays within it.
func Checks(rows []Row) []Check {
	var out []Check
	var lossRows, lossOK, stops, failed, cut, killed int
	var noLossRows int
	var bounded, over int
	var worst *Row
	for i, r := range rows {
		if r.MaxStop > 0 {
			bounded += r.Runs
			over += r.OverStop
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
		}
	}
	if lossRows > 0 {
		out = append(out, Check{
			What: fmt.Sprintf("the harness sees the problem: %d of %d rows that stop the app at once with propagation >= 1s lost requests", lossOK, lossRows),
			OK:   lossOK == lossRows,
		})
	}
	if noLossRows > 0 {
		out = append(out, Check{
			What: fmt.Sprintf("drain >= propagation, graceful app: %d failed, %d cut, %d SIGKILLed in %d stops", failed, cut, killed, stops),
			OK:   failed == 0 && cut == 0 && killed == 0,
		})
	}
	if bounded > 0 {
		out = append(out, Check{
			What: fmt.Sprintf("adaptive drain stops within propagation + quiet + %s: %d of %d stops over (worst: %s at %s, %.2fs of %.2fs)",
				fmtSeconds(seconds(AdaptiveSlack)), over, bounded, worst.Scenario, fmtSeconds(worst.Propagation),
				float64(worst.StopMax), float64(worst.MaxStop)),
			OK: over == 0,
		})
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
		cells := []string{fmt.Sprintf("%-*s", width, r.Name), fmtSeconds(r.Propagation), fmt.Sprint(r.Runs), fmt.Sprint(r.Requests), fmt.Sprint(r.Failed)}
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
		case expect == "":
			expect = "-"
		case r.OK:
			expect += " ok"
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
		if !c.OK {
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
