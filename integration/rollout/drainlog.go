package rollout

import (
	"bufio"
	"bytes"
	"encoding/json"
	"time"
)

// DrainLog is what drainit logged about an adaptive drain of the stopped pod: how it ended and
// how many new connections to the app it saw. Beside the Balancer's count of the connections it
// sent the pod (Result.RoutedAfter), it shows whether the watch missed any.
type DrainLog struct {
	// Reason is drainit's: "quiet" (no new connection for the quiet period), "max", or
	// "fallback" when it could not watch and waited the fixed delay instead.
	Reason   string  `json:"reason"`
	NewConns int     `json:"new_connections"`
	Method   string  `json:"method,omitempty"` // passive-opens, sock-diag or proc-net-tcp
	Drained  Seconds `json:"drained_seconds"`  // from the start of the drain wait to its end
	// Baseline is how long after the drain's start drainit took its baseline: connections that
	// came before it are counted as there already (drainit's log, to the millisecond).
	Baseline Seconds `json:"baseline_seconds"`
	// Routed is how many connections the Balancer sent the pod from drainit's baseline to its
	// answer to the preStop call (the harness's count, to hold NewConns against: fewer seen than
	// routed means the watch missed some; one either way is the two clocks' millisecond at the
	// baseline). Behind pooling L7 proxies it counts requests, which NewConns does not.
	Routed int `json:"routed_during_drain"`
	// ClientClosedFirst counts those of them the client closed first (Route.ClientClosedFirst):
	// they left no TIME_WAIT behind, so a snapshot of the table saw them only while they were
	// open.
	ClientClosedFirst int `json:"client_closed_first"`
	// QuietAfterLast is how long after the last connection sent to the pod the drain ended. The
	// quiet period or more: the watch saw the last connections (or ones close enough behind
	// them). Less: it missed the last ones, and the drain ended early.
	QuietAfterLast Seconds `json:"quiet_after_last_seconds"`
	// Silence is the quiet drainit waited after the last new connection it saw; CPU its own CPU
	// time over the watch (the process's, both from its log, to the millisecond).
	Silence Seconds `json:"silence_seconds"`
	CPU     Seconds `json:"cpu_seconds"`
	// Polls is how many times drainit read the counter or the table, and PollGap the longest
	// time between two reads (its log's longest_poll_gap): a poll late on a busy machine, or
	// spaced out to keep drainit's CPU within its budget.
	Polls   int     `json:"polls"`
	PollGap Seconds `json:"longest_poll_gap_seconds"`
	// CPUShare is drainit's CPU over the watch as a share of one core (its log's cpu_share, to
	// 0.01%; 0 when it did not say).
	CPUShare float64 `json:"cpu_share"`
	// SilenceStalled is how much of that silence the harness was stalled (its timers or its
	// load generator late): a silence it made, not the traffic's (see Result.realFailures).
	SilenceStalled Seconds `json:"silence_stalled_seconds"`
	// End is when drainit logged the drain's end, on its clock (the machine's, as the
	// harness's), to the millisecond: the end of the silence that ended it.
	End time.Time `json:"-"`
	// Auto: the automatic quiet period (--drain-quiet auto), with the rate it judged the silence
	// at (new connections a second), the silence that needed (nil when the arrivals were too
	// few to tell), whether the history before the drain was used, and why it waited for its
	// maximum, if it did.
	Auto          bool     `json:"auto,omitempty"`
	Rate          float64  `json:"rate,omitempty"`
	SilenceNeeded *Seconds `json:"silence_needed_seconds,omitempty"`
	History       bool     `json:"history,omitempty"`
	HistoryFrom   string   `json:"history_from,omitempty"` // passive-opens or app-listeners
	Why           string   `json:"why,omitempty"`
}

// The messages of drainit's log (supervisor/machine.go) that end an adaptive drain.
const (
	msgAdaptiveOver = "adaptive drain over"
	msgFallback     = "cannot watch the app's connections: falling back to the fixed drain delay"
	msgUnwatchable  = "the adaptive drain cannot watch all the app's listeners: falling back to the fixed drain delay; --drain-ports names the TCP ports traffic is routed to"
)

// parseDrainLog finds the end of the adaptive drain in drainit's JSON log lines; nil when there
// is none (a fixed drain, another init, or a log it cannot read).
func parseDrainLog(out []byte) *DrainLog {
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("{")) {
			continue // the app's own output
		}
		var e struct {
			Message  string   `json:"message"`
			Reason   string   `json:"reason"`
			NewConns int      `json:"new_connections"`
			Method   string   `json:"method"`
			Drained  int64    `json:"drained"` // milliseconds (cmd/drainit's zerolog settings)
			Baseline int64    `json:"baseline"`
			Polls    int      `json:"polls"`
			PollGap  int64    `json:"longest_poll_gap"`
			Silence  int64    `json:"silence"`
			CPU      int64    `json:"cpu"`
			CPUShare float64  `json:"cpu_share"`
			Rate     *float64 `json:"rate"`
			Needed   int64    `json:"silence_needed"`
			History  bool     `json:"history"`
			From     string   `json:"history_from"`
			Why      string   `json:"why"`
			Time     string   `json:"time"`
		}
		if json.Unmarshal(line, &e) != nil {
			continue
		}
		switch e.Message {
		case msgAdaptiveOver:
			ms := func(v int64) Seconds { return Seconds(float64(v) / 1000) }
			d := &DrainLog{Reason: e.Reason, NewConns: e.NewConns, Method: e.Method, Drained: ms(e.Drained),
				Baseline: ms(e.Baseline), Polls: e.Polls, PollGap: ms(e.PollGap), Silence: ms(e.Silence), CPU: ms(e.CPU), CPUShare: e.CPUShare}
			d.End, _ = time.Parse(time.RFC3339Nano, e.Time)
			if e.Rate != nil {
				d.Auto, d.Rate, d.History, d.HistoryFrom, d.Why = true, *e.Rate, e.History, e.From, e.Why
				if e.Needed > 0 {
					n := ms(e.Needed)
					d.SilenceNeeded = &n
				}
			}
			return d
		case msgFallback, msgUnwatchable:
			return &DrainLog{Reason: "fallback"}
		}
	}
	return nil
}
