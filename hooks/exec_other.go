//go:build !linux

package hooks

import (
	"context"
	"fmt"
	"runtime"
)

// Run fails off Linux: exec hooks run under drainit's reaper, which only the Linux build has.
// drainit check parses the hooks there and never runs them.
func (h *execHook) Run(context.Context) error {
	return fmt.Errorf("exec hook %s: exec hooks need Linux (this is a %s/%s build)", h.name, runtime.GOOS, runtime.GOARCH)
}
