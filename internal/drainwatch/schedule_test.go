package drainwatch

import (
	"testing"
	"time"
)

func TestSchedule(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	type poll struct {
		ms, n int
		want  Reason
	}
	for _, tc := range []struct {
		name            string
		quiet, min, max time.Duration
		polls           []poll
		wantConns       int
	}{
		{"nothing arrives: quiet after the quiet period", time.Second, 0, 15 * time.Second,
			[]poll{{100, 0, ""}, {999, 0, ""}, {1000, 0, ReasonQuiet}}, 0},
		{"each connection restarts the quiet period, dated by the poll that saw it", time.Second, 0, 15 * time.Second,
			[]poll{{500, 2, ""}, {1000, 0, ""}, {1400, 1, ""}, {2399, 0, ""}, {2400, 0, ReasonQuiet}}, 3},
		{"the minimum holds the end back", time.Second, 3 * time.Second, 15 * time.Second,
			[]poll{{1000, 0, ""}, {2999, 0, ""}, {3000, 0, ReasonQuiet}}, 0},
		{"after the minimum, the quiet period still counts from the last connection", time.Second, 2 * time.Second, 15 * time.Second,
			[]poll{{1900, 1, ""}, {2000, 0, ""}, {2899, 0, ""}, {2900, 0, ReasonQuiet}}, 1},
		{"connections until the maximum", time.Second, 0, 3 * time.Second,
			[]poll{{900, 1, ""}, {1800, 1, ""}, {2700, 1, ""}, {3000, 1, ReasonMax}}, 4},
		{"the maximum wins over a quiet end at the same time", time.Second, 0, 2 * time.Second,
			[]poll{{1000, 1, ""}, {2000, 0, ReasonMax}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := schedule{start: t0, last: t0, quiet: tc.quiet, min: tc.min, max: tc.max}
			for _, p := range tc.polls {
				if got := s.observe(at(p.ms), p.n); got != p.want {
					t.Fatalf("poll at %dms with %d new: %q, want %q", p.ms, p.n, got, p.want)
				}
			}
			if s.newConns != tc.wantConns {
				t.Errorf("%d new connections counted, want %d", s.newConns, tc.wantConns)
			}
		})
	}
}

func TestScheduleNext(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	s := schedule{start: t0, last: t0, quiet: time.Second, max: 3 * time.Second}
	for _, tc := range []struct {
		prev, gap, want int
		why             string
	}{
		{0, 100, 100, "every gap"},
		{800, 100, 900, "quiet end (1000) a gap or more after the next poll: next poll as usual"},
		{880, 100, 1000, "quiet end within the gap after the next poll: that poll moves to it"},
		{950, 100, 1050, "never closer than a gap, even for the quiet end"},
		{2950, 100, 3000, "never after the maximum"},
		{0, 2500, 2500, "a long gap (costly polls) is kept"},
	} {
		if got := s.next(t0.Add(ms(tc.prev)), ms(tc.gap)); !got.Equal(t0.Add(ms(tc.want))) {
			t.Errorf("next after %dms with gap %dms = %s, want %dms: %s", tc.prev, tc.gap, got.Sub(t0), tc.want, tc.why)
		}
	}
}
