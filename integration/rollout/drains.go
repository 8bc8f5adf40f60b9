package rollout

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// DrainStat is one line of the drain comparison (issues 6 and 16): a scenario in one cell (a
// propagation delay or a proxy topology, at a load), with its pod stop durations over the runs,
// and whether every run lost nothing.
type DrainStat struct {
	Scenario    string  `json:"scenario"`
	Name        string  `json:"name"`
	Propagation Seconds `json:"propagation_seconds"` // with a topology: the last proxy's delay
	Topology    string  `json:"topology,omitempty"`
	// Rate is the cell's new connections a second at the stopped pod (0: Config.Rate's load);
	// PodRate what the pod got in the second before the deletion, and AchievedRate what the load
	// generator started of OfferedRate, all proxies together, medians over the runs.
	Rate    float64 `json:"rate,omitempty"`
	PodRate float64 `json:"pod_rate"`
	// Pooled: behind pooling L7 proxies, where PodRate and the last routed are requests (the
	// keep-alive clients' too), not new connections.
	Pooled       bool    `json:"pooled,omitempty"`
	OfferedRate  float64 `json:"offered_rate"`
	AchievedRate float64 `json:"achieved_rate"`
	Runs         int     `json:"runs"`
	Failed       int     `json:"failed"`
	Cut          int     `json:"cut"`
	Killed       int     `json:"sigkilled_runs"`
	// ZeroFailures: no run failed a request, cut one or was SIGKILLed. The stop durations are
	// only a drain's cost when this holds. NoisyRuns counts the runs the machine was too busy to
	// time; Noisy says the failures were all timeouts and cuts in them (see Summarize).
	ZeroFailures bool    `json:"zero_failures"`
	NoisyRuns    int     `json:"noisy_runs,omitempty"`
	Noisy        bool    `json:"noisy,omitempty"`
	StopMin      Seconds `json:"stop_min_seconds"`
	StopMedian   Seconds `json:"stop_median_seconds"`
	StopMax      Seconds `json:"stop_max_seconds"`
	MaxStop      Seconds `json:"max_stop_seconds,omitempty"`    // the claimed bound, if any
	MedianStop   Seconds `json:"median_stop_seconds,omitempty"` // the claimed bound on the median, if any
	Outside      string  `json:"outside_model,omitempty"`       // why there is no claim here
	// AfterLastMedian and AfterLastMax are the stop duration minus the time of the last new
	// connection sent to the pod after the deletion: what the drain cost beyond the traffic.
	AfterLastMedian *Seconds `json:"stop_after_last_routed_median_seconds,omitempty"`
	AfterLastMax    *Seconds `json:"stop_after_last_routed_max_seconds,omitempty"`
	// NewConnsSeen and Routed, for the adaptive drains: the new connections drainit saw during
	// its drains, and those the balancers sent the pod meanwhile, over all runs.
	NewConnsSeen int `json:"new_connections_seen,omitempty"`
	Routed       int `json:"routed_during_drain,omitempty"`
	// QuietAfterLast is the shortest time, over the runs, from the last connection sent to the
	// pod to the end of its adaptive drain (see DrainLog.QuietAfterLast); nil for fixed drains.
	QuietAfterLast *Seconds `json:"quiet_after_last_min_seconds,omitempty"`
	// AutoRate and AutoNeeded, for the automatic quiet period: the rate drainit judged the
	// silence at and the silence that needed, medians over the runs; AutoMax counts the drains
	// that waited for their maximum.
	AutoRate   *float64 `json:"auto_rate_median,omitempty"`
	AutoNeeded *Seconds `json:"auto_silence_needed_median_seconds,omitempty"`
	AutoMax    int      `json:"auto_max_runs,omitempty"`
	// DrainCPU is the most CPU drainit used while draining, as a share of one core, over the
	// runs, as it measured it over its watch (its log's cpu_share; nil: not an adaptive drain);
	// DrainCPUOutside the same seen from outside (Result.DrainCPU: from the deletion, sampled
	// every 20 ms, so it takes in up to 20 ms either side: more, for a short drain).
	DrainCPU        *float64 `json:"drain_cpu_max_fraction,omitempty"`
	DrainCPUOutside *float64 `json:"drain_cpu_outside_max_fraction,omitempty"`
}

// Median of v: its middle value once sorted, the mean of the two middle ones for an even count
// (v is not changed); zero for none.
func Median[T ~float64](v []T) T {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// DrainStats folds results into the drain comparison, in the order scenarios and cells first
// appear. claim gives the stop bounds (nil: none).
func DrainStats(results []Result, claim func(string, Cell) Claim) []DrainStat {
	var out []DrainStat
	rows := Summarize(results, claim)
	for i, group := range byRow(results) {
		first := group[0]
		row := rows[i]
		d := DrainStat{Scenario: first.Scenario, Name: first.Name, Propagation: first.Propagation, Topology: first.Topology,
			Rate: first.Rate, NoisyRuns: row.NoisyRuns, Noisy: row.Noisy, MaxStop: row.MaxStop, MedianStop: row.MedianStop, Outside: row.Outside}
		var stops, afterLast, rates, needed []Seconds
		var podRates, achieved, offered []float64
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
				if res.Drain.SilenceNeeded != nil {
					rates = append(rates, Seconds(res.Drain.Rate))
					needed = append(needed, *res.Drain.SilenceNeeded)
				}
				if res.Drain.Auto && res.Drain.Reason == "max" {
					d.AutoMax++
				}
			}
			if res.LastRouted != nil {
				afterLast = append(afterLast, res.Stop-*res.LastRouted)
			}
			if res.DrainCPU != nil && (d.DrainCPUOutside == nil || *res.DrainCPU > *d.DrainCPUOutside) {
				v := *res.DrainCPU
				d.DrainCPUOutside = &v
			}
			if res.Drain != nil && res.Drain.CPUShare > 0 && (d.DrainCPU == nil || res.Drain.CPUShare > *d.DrainCPU) {
				v := res.Drain.CPUShare
				d.DrainCPU = &v
			}
			d.Pooled = d.Pooled || res.PoolDialsAfter != nil
			stops = append(stops, res.Stop)
			podRates = append(podRates, res.PodRate)
			achieved = append(achieved, res.AchievedRate)
			offered = append(offered, res.OfferedRate)
		}
		slices.Sort(stops)
		d.StopMin, d.StopMax, d.StopMedian = stops[0], stops[len(stops)-1], seconds(Median(stops).Duration())
		if len(afterLast) > 0 {
			m, x := seconds(Median(afterLast).Duration()), slices.Max(afterLast)
			d.AfterLastMedian, d.AfterLastMax = &m, &x
		}
		if len(needed) > 0 {
			r, n := float64(Median(rates)), seconds(Median(needed).Duration())
			d.AutoRate, d.AutoNeeded = &r, &n
		}
		d.PodRate, d.AchievedRate, d.OfferedRate = Median(podRates), Median(achieved), Median(offered)
		d.ZeroFailures = d.Failed == 0 && d.Cut == 0 && d.Killed == 0
		out = append(out, d)
	}
	return out
}

// WriteDrainTable writes the drain comparison as a Markdown table: the pod stop duration at zero
// failures, per scenario and cell. A row that lost requests shows what it lost instead of its
// stop duration, which is then no drain's cost.
func WriteDrainTable(w io.Writer, stats []DrainStat) error {
	var b strings.Builder
	b.WriteString("| drain | proxies (delay) | new conns/s at the pod: target (got) | stops | lost (failed/cut/SIGKILL) | stop, median | stop, max | target | stop - last routed conn, median / max | auto: rate seen, silence needed (median) | drainit CPU while draining, max |\n")
	b.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |\n")
	for _, d := range stats {
		lost := "0"
		median := fmt.Sprintf("%.2fs", float64(d.StopMedian))
		if !d.ZeroFailures {
			lost = fmt.Sprintf("%d/%d/%d", d.Failed, d.Cut, d.Killed)
			median = "- (lost requests)"
			if d.Noisy {
				lost += " (noisy)"
				median = fmt.Sprintf("%.2fs", float64(d.StopMedian))
			}
		}
		if d.NoisyRuns > 0 {
			lost += fmt.Sprintf(", %d noisy run(s)", d.NoisyRuns)
		}
		target := "-"
		switch {
		case d.Outside != "":
			target = "none: " + d.Outside
		case d.MaxStop > 0:
			verdict := "ok"
			if d.StopMax > d.MaxStop {
				verdict = "FAIL"
			}
			target = fmt.Sprintf("<= %.2fs %s", float64(d.MaxStop), verdict)
		case d.MedianStop > 0:
			verdict := "ok"
			if d.StopMedian > d.MedianStop {
				verdict = "FAIL"
			}
			target = fmt.Sprintf("median <= %.2fs %s", float64(d.MedianStop), verdict)
		}
		got := fmt.Sprintf("%.0f", d.PodRate)
		if d.Pooled {
			got += " requests/s" // the keep-alive clients' too
		}
		rate := "(" + got + ")"
		if d.Rate > 0 {
			rate = fmt.Sprintf("%.0f (%s)", d.Rate, got)
		}
		afterLast := "-"
		if d.AfterLastMedian != nil {
			afterLast = fmt.Sprintf("%.2fs / %.2fs", float64(*d.AfterLastMedian), float64(*d.AfterLastMax))
		}
		auto := "-"
		if d.AutoRate != nil {
			auto = fmt.Sprintf("%.0f/s, %.2fs", *d.AutoRate, float64(*d.AutoNeeded))
		}
		if d.AutoMax > 0 {
			auto += fmt.Sprintf(" (%d at max)", d.AutoMax)
		}
		cpu := "-"
		if d.DrainCPU != nil {
			cpu = fmt.Sprintf("%.2f%%", *d.DrainCPU*100)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %s | %s | %.2fs | %s | %s | %s | %s |\n", d.Name,
			Cell{Propagation: d.Propagation.Duration(), Topology: d.Topology}, rate, d.Runs, lost, median, float64(d.StopMax),
			target, afterLast, auto, cpu)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
