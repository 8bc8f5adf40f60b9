package main

import (
	"fmt"
	"strings"
	"time"
)

// controlCase is the control server's answers under one condition.
type controlCase struct {
	label    string
	asked    int     // requests made
	answered int     // answered 200
	late     int     // answered 200, but after the kubelet's default probe timeout
	p50, p99 float64 // of every request, failed ones at the time they failed
	max      float64
	dials    int64    // connections the slow client opened while the requests were made
	cpu      float64  // drainit's CPU time over the case, seconds
	span     float64  // the case's duration, seconds
	rss      float64  // drainit's VmRSS at the end, bytes
	errs     []string // the first few failures, as the client saw them
}

// controlResults is what the control phase measured.
type controlResults struct {
	date   time.Time
	load   string // 1-minute load average at the start of the phase
	quick  bool
	conns  int // the slow client's connections
	gap    float64
	cases  []controlCase
	failed string // why the phase could not run, if it could not
}

// markdown renders the control phase as a section of RESULTS.md.
func (c *controlResults) markdown() string {
	if c == nil {
		return ""
	}
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("\n## Control server under a slow client\n\n")
	if c.failed != "" {
		w("Not measured: %s\n", c.failed)
		return b.String()
	}
	mode := "full run"
	if c.quick {
		mode = "**quick run: indicative only**"
	}
	w("Measured %s (%s), load average (1 min) %s at the start of the phase.\n", c.date.Format("2006-01-02 15:04 MST"), mode, c.load)
	w("drainit as PID 1 with `--http-addr 127.0.0.1:PORT`; the kubelet's part is played from 127.0.0.1\n")
	w("by Go's HTTP client (as the kubelet's probes: a new connection per request, `GET /healthz`),\n")
	w("one request every %s. The slow client (`integration/slowclient`) holds %d connections,\n", fmtValue(metricTime, c.gap), c.conns)
	w("half idle and half sending a request head a byte every 200 ms, and re-opens each as soon as\n")
	w("the server closes it. The issue's target: every request answered 200 within 1 s. Latencies are\n")
	w("of every request, a failed one's until it failed.\n\n")
	w("| | answered 200 | over 1 s | median | p99 | max | slow client's connections opened | drainit CPU | drainit RSS |\n")
	w("|---|---|---|---|---|---|---|---|---|\n")
	for _, k := range c.cases {
		cpu := "–"
		if k.span > 0 {
			cpu = fmt.Sprintf("%.0f%% of a CPU", 100*k.cpu/k.span)
		}
		rss := "–"
		if k.rss > 0 {
			rss = fmtValue(metricBytes, k.rss)
		}
		w("| %s | %d/%d | %d | %s | %s | %s | %d in %.1f s | %s | %s |\n", k.label, k.answered, k.asked, k.late,
			fmtValue(metricTime, k.p50), fmtValue(metricTime, k.p99), fmtValue(metricTime, k.max), k.dials, k.span, cpu, rss)
	}
	for _, k := range c.cases {
		for _, e := range k.errs {
			w("- %s: %s\n", k.label, e)
		}
	}
	w("\nThe slow client runs in the benchmark's process and competes with it and with drainit for the\n")
	w("same CPUs, so the latencies under it include its own load on the machine.\n")
	return b.String()
}
