//go:build !linux

package drainwatch

import (
	"errors"
	"time"
)

func systemEnv(cfg Config) env {
	return env{
		now:     cfg.Now,
		wait:    waitUntil(cfg.Now),
		measure: func(f func()) time.Duration { f(); return 0 },
		open: func(Config) (sampler, Setup, error) {
			return nil, Setup{}, errors.New("the adaptive drain needs Linux (/proc/net/tcp)")
		},
	}
}

// systemCounter is nil: no PassiveOpens counter to record outside Linux.
func systemCounter() func() (uint64, error) { return nil }
