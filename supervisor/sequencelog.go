package supervisor

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/internal/drainwatch"
	"github.com/drainit/drainit/signals"
)

// How the stop sequence is logged: the machine (sequence.go, machine.go) decides what happens, and
// the functions here compose its log lines, its timeline's marks and the summary.

// event logs a step of the stop sequence with its phase and the time since t0, and keeps it for
// the summary.
func (m *machine) event(now time.Time, level zerolog.Level, what string) *zerolog.Event {
	m.timeline = append(m.timeline, mark{now, what})
	return m.line(now, level)
}

// debug starts a debug line of the stop sequence, one its timeline leaves out.
func (m *machine) debug(now time.Time) *zerolog.Event { return m.line(now, zerolog.DebugLevel) }

// line starts a log line with the phase and, once a stop sequence has started, the time since t0.
func (m *machine) line(now time.Time, level zerolog.Level) *zerolog.Event {
	e := m.log.WithLevel(level).Str("phase", m.phase.String())
	if !m.t0.IsZero() {
		e = e.Dur("elapsed", now.Sub(m.t0))
	}
	return e
}

// logStart logs the stop sequence's first event, for the trigger sig (0: a /prestop), with its
// deadline.
func (m *machine) logStart(now time.Time, sig unix.Signal) {
	name, what, msg := "/prestop", "trigger /prestop", "stop sequence started by /prestop"
	if sig != 0 {
		name, what, msg = signals.Name(sig), "trigger", "stop sequence started"
	}
	if m.appExited {
		what, msg = "trigger "+name+" (app already exited)", "stop requested after the app exited: finishing by the deadline"
	}
	e := m.event(now, zerolog.InfoLevel, what).Time("deadline", m.deadline().UTC())
	if m.appExited {
		e = e.Str("trigger", name)
	} else if sig != 0 {
		e = e.Str("signal", name)
	}
	e.Msg(msg)
}

// summary is the one-line timeline: each mark with its offset from t0 (or from the app's start
// when there was no trigger). A trigger after the app's exit makes the marks before it negative
// (app exited 3 -1.2s; trigger SIGTERM (app already exited) +0s): they are shown so, where they
// were shown as +0s, as if they had come with the trigger.
func (m *machine) summary(now time.Time) string {
	base := m.base()
	var b strings.Builder
	for i, mk := range m.timeline {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s %s", mk.what, offset(mk.at.Sub(base)))
	}
	if m.killed {
		b.WriteString("; drainit had to SIGKILL")
	}
	fmt.Fprintf(&b, "; exit %d %s", m.cfg.ExitMap.Apply(m.appStatus), offset(now.Sub(base)))
	return b.String()
}

// base is what the timeline's marks are counted from: t0, or the app's start before a trigger.
func (m *machine) base() time.Time {
	if m.t0.IsZero() {
		return m.start
	}
	return m.t0
}

// offset is a mark's time from the summary's base, signed, to the millisecond: +1.5s, -200ms.
func offset(d time.Duration) string {
	d = d.Round(time.Millisecond)
	if d < 0 {
		return d.String()
	}
	return "+" + d.String()
}

// logWatching logs what the adaptive drain watches, once its watcher has found it: the
// operator's one view of which listeners decide when the pod stops.
func (m *machine) logWatching(now time.Time, st drainwatch.Setup) {
	ev := m.line(now, zerolog.InfoLevel).Strs("watched", listenerStrings(st.Watched)).
		Dict("not_watched", listenersByWhy(st.Unwatched))
	if st.Method != "" {
		ev = ev.Str("method", string(st.Method))
	}
	ev.Msg("adaptive drain: listeners found")
}

// listenerStrings is ls for a log field.
func listenerStrings(ls []drainwatch.Listener) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.String()
	}
	return out
}

// listenersByWhy is ls for a log field that says each reason once: {"why": ["tcp …", …], …}.
func listenersByWhy(ls []drainwatch.Listener) *zerolog.Event {
	d := zerolog.Dict()
	whys, where := drainwatch.ByWhy(ls)
	for i, why := range whys {
		d = d.Strs(why, where[i])
	}
	return d
}

// unwatchableKinds names what kinds of listener made the drain fixed, for the summary: "serves
// UDP", "UNIX socket", "unreadable listener".
func unwatchableKinds(ls []drainwatch.Listener) string {
	var kinds []string
	for _, l := range ls {
		k := "unreadable listener" // a TCP one that a process drainit may not read may hold
		switch l.Proto {
		case "udp":
			k = "serves UDP"
		case "unix":
			k = "UNIX socket"
		}
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	return strings.Join(kinds, ", ")
}

// logAppExit logs the app's exit, and the OOM killer when it is the likely cause.
func (m *machine) logAppExit(now time.Time, ws unix.WaitStatus) {
	what, oom := fmt.Sprintf("app exited %d", m.appStatus), false
	if ws.Signaled() && ws.Signal() == unix.SIGKILL {
		// 137 is also what an app's own exit(137) gives; and a SIGKILL that drainit did not
		// send is the OOM killer's when its count has grown meanwhile.
		oom = !m.killed && m.oomKills > 0
		if oom {
			what += " (OOM-killed)"
		} else {
			what += " (killed by SIGKILL)"
		}
	}
	e := m.event(now, zerolog.InfoLevel, what).Int("status", m.appStatus).Dur("ran", now.Sub(m.start))
	if ws.Signaled() {
		e = e.Str("signal", signals.Name(ws.Signal()))
	}
	if oom {
		e = e.Uint64("oom_kills", m.oomKills)
	}
	e.Msg("app exited")
	if oom {
		m.line(now, zerolog.WarnLevel).Uint64("oom_kills", m.oomKills).
			Msg("the app was killed by SIGKILL, and the kernel's OOM killer has killed processes in the container since it started: out of memory (the container's memory limit?)")
	}
}

// logWatchUnavailable warns that the adaptive drain cannot watch the app, and returns how the
// fixed drain that follows is marked in the timeline.
func (m *machine) logWatchUnavailable(now time.Time, r drainwatch.Result) string {
	if len(r.Unwatchable) > 0 {
		// Not a failure of the watch: the app takes traffic in where the watch cannot see it
		// end, and a watch of the rest would prove nothing.
		m.line(now, zerolog.WarnLevel).Dict("unwatchable", listenersByWhy(r.Unwatchable)).
			Dur("drain_delay", m.fallbackDelay()).
			Msg("the adaptive drain cannot watch all the app's listeners: falling back to the fixed drain delay; --drain-ports names the TCP ports traffic is routed to")
		return " (fixed, " + unwatchableKinds(r.Unwatchable) + ")"
	}
	m.line(now, zerolog.WarnLevel).Err(r.Err).Dur("drain_delay", m.fallbackDelay()).
		Msg("cannot watch the app's connections: falling back to the fixed drain delay")
	return " (fixed, fallback)"
}

// logDrainOver logs the end of the adaptive drain with what the watcher saw.
func (m *machine) logDrainOver(now time.Time, r drainwatch.Result) {
	if r.Busy > 0 && r.NewConns == 0 {
		// Not one new connection in the whole drain, yet requests came over connections already
		// open: a proxy that keeps its connections to the pod may route each request over them,
		// and then the silence says nothing of when it stops. (Where new connections came, they
		// show the routing; requests on open ones are then most likely keep-alive clients'.)
		m.line(now, zerolog.WarnLevel).Int("busy_connections", r.Busy).Dur("silence", r.Silence).
			Msg("no new connection came during the drain, but requests came over open connections during the silence it waited: if a proxy that pools its connections to the pod routes to it (an ingress controller, a mesh sidecar, a cloud load balancer), it may still be routing; --drain-watch requests waits for those requests to stop too")
	}
	what := fmt.Sprintf("drain ended: %s, %d new connections", r.Reason, r.NewConns)
	watch := "connections"
	if r.Requests {
		watch = "requests"
		what += fmt.Sprintf(", data on open connections %d times", r.OpenData)
	}
	ev := m.event(now, zerolog.InfoLevel, what).Str("watch", watch).
		Str("reason", string(r.Reason)).Int("new_connections", r.NewConns).Str("method", string(r.Method)).
		Int("listeners", len(r.Watched)).Int("polls", r.Polls).Dur("longest_poll_gap", r.Interval).
		Dur("baseline", r.Baseline).Dur("silence", r.Silence).Dur("cpu", r.CPU)
	if r.Requests {
		ev = ev.Int("open_connection_data", r.OpenData)
	}
	if r.Elapsed > 0 {
		// drainit's CPU while watching, as a share of one core: the budget is 2%.
		ev = ev.Float64("cpu_share", math.Round(r.CPU.Seconds()/r.Elapsed.Seconds()*1e4)/1e4)
	}
	if a := r.Auto; a != nil {
		// The automatic quiet period: the rate it judged the silence at, and what that needed.
		ev = ev.Float64("rate", math.Round(a.Rate*10)/10).Int("rate_arrivals", a.Arrivals).
			Dur("rate_window", a.Window).Dur("silence_needed", a.Needed).Bool("history", r.HistoryUsed)
		if r.HistoryFrom != "" {
			ev = ev.Str("history_from", r.HistoryFrom)
		}
		if r.Note != "" {
			ev = ev.Str("why", r.Note)
		}
	}
	ev.Dur("drained", now.Sub(m.drainAt)).Msg("adaptive drain over")
}

// logWatchSilent says that the adaptive drain's watcher had not reported a second after the end
// it was given (a machine too loaded to run it, or a watch stuck in a read), so the backstop
// ended the drain.
func (m *machine) logWatchSilent(now time.Time) {
	m.event(now, zerolog.WarnLevel, "drain ended: the watch did not report").Dur("late", now.Sub(m.watchEnd)).
		Msg("the adaptive drain's watch did not report by its end: ending the drain")
}
