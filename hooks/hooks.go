// Package hooks runs the actions drainit takes around the app's life: offline hooks before the
// drain (deregister from service discovery), online hooks once the app is ready, and post-stop
// hooks after it has exited. A hook is an exec or an HTTP call; each runs under its own timeout
// and under the deadline of the stop sequence, and a failure is reported, never fatal.
//
// # Who waits for an exec hook's process
//
// drainit has one reaper, the supervisor's wait4(-1) loop, and nothing else may wait for a
// child: a second waiter could steal the app's status, and the reaper would steal a hook's. So
// an exec hook never calls wait. It starts its process through the [Children] given to
// [NewExec] and learns how the process ended from it; the reaper hands every status it
// collects to [Children.Exited]. The pid is registered under the same lock the fork runs under,
// so a hook that exits before the fork has even returned to its caller is still routed to it.
//
// # Output
//
// An exec hook's stdout and stderr are pipes, not drainit's own streams: each line becomes one
// log event, on the logger of Run's context (zerolog.Ctx; RunAll puts its own there), with the
// fields hook (the hook's name) and stream ("stdout" or "stderr"), so a hook's output can always
// be told from the app's (drainit's log gives them less of its queue than its own lines, by the
// stream field: StreamField). Lines longer than maxLine (3904 bytes) are split, so that each
// event fits in one write of PIPE_BUF bytes; empty lines are dropped. Stdin is empty.
//
// # Stopping
//
// When its context ends, an exec hook's process group gets SIGTERM, then SIGKILL one second later
// unless everything is gone by then: the group's every member, and every process holding the hook's
// output (one that left the group with setsid can only be waited for). Run returns once the hook's
// process has been reaped and every process holding its output has exited, or at most
// config.HookOverrun after the context ended; at the last deadline ([ErrLastDeadline]) the group
// gets SIGKILL at once, and Run returns config.LastHookOverrun after it at most. A hook that exits
// on its own but leaves processes behind is not waited for: its output is read for one more second,
// and they are left to the supervisor.
//
// The group is signalled through the leader's pidfd, never by its number alone: once the leader
// is reaped and the group's last member gone, the number is anyone's (see group in
// exec_linux.go).
package hooks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/drainit/drainit/internal/config"
)

// How long an exec hook's processes get at each step of stopping. The stop's budget gives a hook
// config.HookOverrun after its context ends (termGrace + killWait), and config.LastHookOverrun
// after the last deadline (lastKillWait): a caller that must be done by a deadline gives hooks a
// context that ends that long before it.
const (
	termGrace    = time.Second                    // from SIGTERM to SIGKILL
	killWait     = config.HookOverrun - termGrace // after SIGKILL, for the exit status and the end of the output
	lastKillWait = config.LastHookOverrun         // killWait for a context that ended with ErrLastDeadline
	outputWait   = time.Second                    // after a normal exit, for processes it left to close its output
)

// ErrLastDeadline, as the cause of a context's end, says that the runtime's SIGKILL follows the
// deadline closely and every moment before it is the hook's: an exec hook then still running is
// SIGKILLed at once, without the SIGTERM grace, and Run outlives its context by lastKillWait at
// most. It is the post-stop hooks' deadline, which without it would have to leave termGrace +
// killWait (2 s) unused: after drainit had to SIGKILL the app, the default kill margin of 2 s would
// leave them nothing.
var ErrLastDeadline = errors.New("the stop's deadline is near")

// Hook is one action. Run returns when the action is done, failed, or ctx ended; it must not
// outlive ctx by more than the time it takes to kill what it started (config.HookOverrun at most).
// It logs what it has to say (an exec hook's output) on zerolog.Ctx(ctx).
type Hook interface {
	// Name identifies the hook in the log ("offline-exec", "post-stop-http").
	Name() string
	Run(ctx context.Context) error
}

// Outcome counts how a RunAll went, for the stop sequence's summary.
type Outcome struct{ OK, Failed, Skipped int }

func (o Outcome) String() string {
	s := fmt.Sprintf("%d ok", o.OK)
	if o.Failed > 0 {
		s += fmt.Sprintf(", %d failed", o.Failed)
	}
	if o.Skipped > 0 {
		s += fmt.Sprintf(", %d skipped", o.Skipped)
	}
	return s
}

// RunAll runs hooks one after another, each under timeout (0: none) and under ctx, with log as
// the hook's logger, and logs each outcome. It returns once all have run or ctx has ended;
// failures do not stop the ones after.
// A hook whose own timeout ends it says so in its error (the cause of its context), so that the
// log tells the hook timeout apart from the end of ctx.
func RunAll(ctx context.Context, log zerolog.Logger, timeout time.Duration, hs []Hook) Outcome {
	var o Outcome
	for _, h := range hs {
		if ctx.Err() != nil {
			log.Warn().Str("hook", h.Name()).Msg("hook skipped: no time left")
			o.Skipped++
			continue
		}
		hctx, cancel := ctx, context.CancelFunc(func() {})
		if timeout > 0 {
			hctx, cancel = context.WithTimeoutCause(ctx, timeout,
				fmt.Errorf("hook timeout of %s reached: %w", timeout, context.DeadlineExceeded))
		}
		start := time.Now()
		err := h.Run(log.WithContext(hctx))
		cancel()
		if err != nil {
			log.Warn().Str("hook", h.Name()).Dur("took", time.Since(start)).Err(err).Msg("hook failed; going on")
			o.Failed++
			continue
		}
		log.Info().Str("hook", h.Name()).Dur("took", time.Since(start)).Msg("hook done")
		o.OK++
	}
	return o
}

// ended describes why ctx ended, for a hook's error: "timed out after 10s: hook timeout of 10s
// reached: context deadline exceeded". The result wraps ctx's cause, so errors.Is finds
// context.DeadlineExceeded or context.Canceled in it.
func ended(ctx context.Context, took time.Duration) error {
	what := "cancelled"
	if ctx.Err() == context.DeadlineExceeded {
		what = "timed out"
	}
	return fmt.Errorf("%s after %s: %w", what, took.Round(time.Millisecond), context.Cause(ctx))
}
