package logline

import (
	"sync"
	"time"
)

// Limiter spaces out a log line that others can cause again and again (a request refused for its
// token, an app stopped and continued in a loop): it lets an occurrence through to the log at
// most once per Every and counts the ones it holds back. Set Every before the first Tick; it is
// safe for concurrent use.
type Limiter struct {
	Every time.Duration

	mu   sync.Mutex
	last time.Time
	n    int
}

// Tick counts one occurrence at now. ok says whether to log it; n is then how many occurrences
// the line stands for: this one and those held back since the last line.
func (l *Limiter) Tick(now time.Time) (n int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	if !l.last.IsZero() && now.Sub(l.last) < l.Every {
		return 0, false
	}
	n, l.n, l.last = l.n, 0, now
	return n, true
}
