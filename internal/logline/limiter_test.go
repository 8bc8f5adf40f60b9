package logline

import (
	"testing"
	"time"
)

// The first occurrence is logged; the next ones within Every are counted into the first line
// after it.
func TestLimiter(t *testing.T) {
	l := Limiter{Every: 10 * time.Second}
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		at     time.Duration
		n      int
		logged bool
	}{
		{0, 1, true},
		{time.Second, 0, false},
		{9 * time.Second, 0, false},
		{10 * time.Second, 3, true},
		{15 * time.Second, 0, false},
		{time.Minute, 2, true},
		{time.Minute + 10*time.Second, 1, true},
	} {
		if n, ok := l.Tick(t0.Add(c.at)); n != c.n || ok != c.logged {
			t.Errorf("Tick at +%v = %d, %t; want %d, %t", c.at, n, ok, c.n, c.logged)
		}
	}
}
