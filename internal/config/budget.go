package config

import (
	"math"
	"time"
)

// The stop sequence's time budget (Budget), worked out once from drainit's options. The
// supervisor runs the stop by it; drainit's start-up warnings and drainit check judge a
// configuration by it. It is arithmetic on durations only: no clock. NewBudget is its formulas;
// the steps they bound are in docs/stop-sequence.md.
//
// Why these margins: drainit SIGKILLs the kill margin before the runtime does (grace after its
// stop began: docs/kubelet-stop-sequence.md), so that its post-stop hooks, its summary and the
// app's exit status are not lost to the runtime's SIGKILL. Slow offline hooks may eat the drain
// but not the app's time to stop (MinGraceAfterSignal). Each stage's context ends HookOverrun
// before the stage must be done; the post-stop hooks' may use the kill margin, as nothing comes
// after them but drainit's exit (exitTime). drainit is gone exitSlack before the deadline, as its
// t0 comes 1-40 ms after the kubelet's.

// BudgetOptions are the values the budget is worked out from: drainit's options, as parsed, and how
// long a hook outlives its context. A negative value counts as 0.
type BudgetOptions struct {
	Grace      time.Duration // --grace-period
	KillMargin time.Duration // --kill-margin
	DrainDelay time.Duration // --drain-delay
	DrainMax   time.Duration // --drain-max
	Adaptive   bool          // --drain adaptive
	// HookOverrun and LastHookOverrun are how long an exec hook outlives its context, and its
	// context at the last deadline: the constants of the same names for drainit. They set the
	// hooks' deadlines only; drainit check, which reads none, leaves them 0.
	HookOverrun, LastHookOverrun time.Duration
}

// Budget is the stop's time budget: each instant is a duration since t0. A value before 0 is an
// instant that has passed when the stop begins.
type Budget struct {
	Deadline      time.Duration // the runtime's SIGKILL: the grace period
	KillAt        time.Duration // drainit's SIGKILL to whatever still runs
	StopBy        time.Duration // the latest stop signal
	HooksDeadline time.Duration // the offline hooks' context ends, for them to be done by StopBy
	// LateHooksDeadline is HooksDeadline for offline hooks that the app's own exit started
	// before the trigger: with no stop signal to send, they may run to the kill point.
	LateHooksDeadline time.Duration
	PostStopDeadline  time.Duration // the post-stop hooks' context ends, for drainit to exit in time
	ExitBy            time.Duration // drainit has exited, its last log lines written
	// Drain is the longest the drain can take: --drain-delay, or --drain-max when adaptive; the
	// option is DrainFlag ("drain-delay" or "drain-max").
	Drain     time.Duration
	DrainFlag string
	// OfflineRoom is the longest the offline hooks can take and leave the drain whole: StopBy −
	// Drain. PostStopRoom is the longest a post-stop hook can run in a stop that drained in full
	// with no offline hooks, its app gone at the stop signal: PostStopDeadline − Drain. The
	// start-up warnings compare the hook timeouts with them.
	OfflineRoom, PostStopRoom time.Duration
	// MinGrace is the least grace period that leaves the drain whole before the kill point:
	// Drain + the kill margin. drainit check compares the grace a probe failure gets with it.
	MinGrace time.Duration

	opts BudgetOptions // what it was worked out from, for Shortened
}

// MinGraceAfterSignal is the least time the kubelet gives the runtime from the stop signal to
// SIGKILL: pkg/kubelet/kuberuntime's minimumGracePeriodInSeconds (k8s.io/kubernetes v1.33;
// docs/kubelet-stop-sequence.md). It is also all the container gets once the kubelet's wait for
// its preStop hook has taken the whole grace period, and the least the budget's stop signal
// leaves the app before the kill point, unless the configuration leaves it less.
const MinGraceAfterSignal = 2 * time.Second

// HookOverrun is the most an exec hook outlives its context by: package hooks gives its
// processes 1 s from SIGTERM to SIGKILL and 1 s more for their exit status and output.
// LastHookOverrun is the same after the last deadline, when they get SIGKILL at once: the exit
// status and the last of the output matter less then than exiting before the runtime's SIGKILL.
const (
	HookOverrun     = 2 * time.Second
	LastHookOverrun = 300 * time.Millisecond
)

// exitTime is what drainit keeps after its post-stop hooks to log the summary, write the
// termination log and exit; exitSlack is how long before the deadline it must be gone.
const (
	exitTime  = 200 * time.Millisecond
	exitSlack = 100 * time.Millisecond
)

// NewBudget works out the budget for o.
func NewBudget(o BudgetOptions) Budget {
	for _, d := range []*time.Duration{&o.Grace, &o.KillMargin, &o.DrainDelay, &o.DrainMax, &o.HookOverrun, &o.LastHookOverrun} {
		*d = max(*d, 0)
	}
	b := Budget{opts: o, Deadline: o.Grace, Drain: o.DrainDelay, DrainFlag: "drain-delay"}
	if o.Adaptive {
		b.Drain, b.DrainFlag = o.DrainMax, "drain-max"
	}
	b.KillAt = sub(b.Deadline, o.KillMargin)
	b.StopBy = sub(b.KillAt, min(MinGraceAfterSignal, max(0, sub(b.KillAt, b.Drain))))
	b.HooksDeadline, b.LateHooksDeadline = sub(b.StopBy, o.HookOverrun), sub(b.KillAt, o.HookOverrun)
	b.PostStopDeadline = sub(sub(b.Deadline, o.LastHookOverrun), exitTime)
	b.ExitBy = b.Deadline - exitSlack
	b.OfflineRoom, b.PostStopRoom = sub(b.StopBy, b.Drain), sub(b.PostStopDeadline, b.Drain)
	b.MinGrace = AddDur(b.Drain, o.KillMargin)
	return b
}

// sub is a − b for b ≥ 0, down to the earliest Duration, which it stands for anything earlier:
// a kill margin of 1500000h must not wrap round to a kill point after the deadline.
func sub(a, b time.Duration) time.Duration {
	if a < math.MinInt64+b {
		return math.MinInt64
	}
	return a - b
}

// Shortened is the budget once the stop is found, elapsed after t0, to have left at most before
// the runtime's SIGKILL (the kubelet's signal came while its preStop call still waited: the
// pod's grace period is over). The deadline comes in to elapsed + left when that is earlier, and
// the kill margin is half of what is then left at most: the other half is the app's.
func (b Budget) Shortened(elapsed, left time.Duration) Budget {
	o := b.opts
	elapsed, left = max(elapsed, 0), max(left, 0)
	o.Grace = min(o.Grace, AddDur(elapsed, left))
	o.KillMargin = min(o.KillMargin, max(o.Grace-elapsed, 0)/2)
	return NewBudget(o)
}
