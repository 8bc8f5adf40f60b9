// Package hooks runs the actions drainit takes around the app's life: offline hooks before the
// drain (deregister from service discovery), online hooks once the app is ready, and post-stop
// hooks after it has exited. A hook is an exec or an HTTP call; each runs under its own timeout
// and under the deadline of the stop sequence, and a failure is reported, never fatal.
package hooks

import (
	"context"
	"time"

	"github.com/rs/zerolog"
)

// Hook is one action. Run returns when the action is done, failed, or ctx ended; it must not
// outlive ctx by more than the time it takes to kill what it started.
type Hook interface {
	// Name identifies the hook in the log ("offline-exec", "post-stop-http").
	Name() string
	Run(ctx context.Context) error
}

// RunAll runs hooks one after another, each under timeout (0: none) and under ctx, and logs each
// outcome. It returns once all have run or ctx has ended; failures do not stop the ones after.
func RunAll(ctx context.Context, log zerolog.Logger, timeout time.Duration, hs []Hook) {
	for _, h := range hs {
		if ctx.Err() != nil {
			log.Warn().Str("hook", h.Name()).Msg("hook skipped: no time left")
			continue
		}
		hctx, cancel := ctx, context.CancelFunc(func() {})
		if timeout > 0 {
			hctx, cancel = context.WithTimeout(ctx, timeout)
		}
		start := time.Now()
		err := h.Run(hctx)
		cancel()
		if err != nil {
			log.Warn().Str("hook", h.Name()).Dur("took", time.Since(start)).Err(err).Msg("hook failed; going on")
			continue
		}
		log.Info().Str("hook", h.Name()).Dur("took", time.Since(start)).Msg("hook done")
	}
}
