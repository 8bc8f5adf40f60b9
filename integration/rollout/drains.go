package rollout

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// DrainStat is one line of the drain comparison (issue 6): a scenario at one propagation delay,
// with its pod stop durations over the runs, and whether every run lost nothing.
type DrainStat struct {
	Scenario    string  `json:"scenario"`
	Name        string  `json:"name"`
	Propagation Seconds `json:"propagation_seconds"`
	Runs        int     `json:"runs"`
	Failed      int     `json:"failed"`
	Cut         int     `json:"cut"`
	Killed      int     `json:"sigkilled_runs"`
	// ZeroFailures: no run failed a request, cut one or was SIGKILLed. The stop durations are
	// only a drain's cost when this holds.
	ZeroFailures bool    `json:"zero_failures"`
	StopMin      Seconds `json:"stop_min_seconds"`
	StopMedian   Seconds `json:"stop_median_seconds"`
	StopMax      Seconds `json:"stop_max_seconds"`
	MaxStop      Seconds `json:"max_stop_seconds,omitempty"` // the claimed bound, if any
	// NewConnsSeen and Routed, for the adaptive drain: the new connections drainit saw during
	// its drains, and those the balancer sent the pod meanwhile, over all runs.
	NewConnsSeen int `json:"new_connections_seen,omitempty"`
	Routed       int `json:"routed_during_drain,omitempty"`
	// QuietAfterLast is the shortest time, over the runs, from the last connection sent to the
	// pod to the end of its adaptive drain (see DrainLog.QuietAfterLast); nil for fixed drains.
	QuietAfterLast *Seconds `json:"quiet_after_last_min_seconds,omitempty"`
}

// DrainStats folds results into the drain comparison, in the order scenarios and propagation
// delays first appear. claim gives the stop bounds (nil: none).
func DrainStats(results []Result, claim func(string, time.Duration) Claim) []DrainStat {
	var out []DrainStat
	for _, group := range byRow(results) {
		first := group[0]
		d := DrainStat{Scenario: first.Scenario, Name: first.Name, Propagation: first.Propagation}
		var s []Seconds
		for _, res := range group {
			d.Runs++
			d.Failed += res.Failed
			d.Cut += res.Cut
			if res.Killed {
				d.Killed++
			}
			if res.Drain != nil {
				d.NewConnsSeen += res.Drain.NewConns
				d.Routed += res.Drain.Routed
				if q := res.Drain.QuietAfterLast; res.Drain.Reason != "fallback" && (d.QuietAfterLast == nil || q < *d.QuietAfterLast) {
					d.QuietAfterLast = &q
				}
			}
			s = append(s, res.Stop)
		}
		slices.Sort(s)
		d.StopMin, d.StopMax = s[0], s[len(s)-1]
		d.StopMedian = s[len(s)/2]
		if len(s)%2 == 0 {
			d.StopMedian = seconds(((s[len(s)/2-1] + s[len(s)/2]) / 2).Duration())
		}
		d.ZeroFailures = d.Failed == 0 && d.Cut == 0 && d.Killed == 0
		if claim != nil {
			d.MaxStop = seconds(claim(d.Scenario, d.Propagation.Duration()).MaxStop)
		}
		out = append(out, d)
	}
	return out
}

// WriteDrainTable writes the drain comparison as a Markdown table: the pod stop duration at zero
// failures, per scenario and propagation delay. A row that lost requests shows what it lost
// instead of its stop duration, which is then no drain's cost.
func WriteDrainTable(w io.Writer, stats []DrainStat) error {
	var b strings.Builder
	b.WriteString("| drain | propagation | stops | lost (failed/cut/SIGKILL) | stop, median | stop, min-max | claimed bound | new conns seen/sent | last conn to drain end, min |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, d := range stats {
		lost := "0"
		median := fmt.Sprintf("%.2fs", float64(d.StopMedian))
		if !d.ZeroFailures {
			lost = fmt.Sprintf("%d/%d/%d", d.Failed, d.Cut, d.Killed)
			median = "- (lost requests)"
		}
		bound := "-"
		if d.MaxStop > 0 {
			verdict := "ok"
			if d.StopMax > d.MaxStop {
				verdict = "FAIL"
			}
			bound = fmt.Sprintf("<= %.2fs %s", float64(d.MaxStop), verdict)
		}
		seen := "-"
		if d.Routed > 0 || d.NewConnsSeen > 0 {
			seen = fmt.Sprintf("%d/%d", d.NewConnsSeen, d.Routed)
		}
		quiet := "-"
		if d.QuietAfterLast != nil {
			quiet = fmt.Sprintf("%.2fs", float64(*d.QuietAfterLast))
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %.2f-%.2fs | %s | %s | %s |\n", d.Name, fmtSeconds(d.Propagation), d.Runs,
			lost, median, float64(d.StopMin), float64(d.StopMax), bound, seen, quiet)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
