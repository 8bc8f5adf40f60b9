package drainwatch

import "time"

// schedule decides when the drain ends and when to poll next. It is pure: it is told the time
// of each poll and what the poll saw.
//
// The drain ends with "quiet" at the first poll at or after max(last + quiet, start + min) that
// saw no new connection, where last is the poll that saw the latest one (start before any); or
// with "max" at start + max. A connection is dated by the poll that saw it, which is at most one
// poll interval after it arrived, so the drain never ends sooner than quiet after the last
// connection; it may end up to one interval later.
//
// With auto (the automatic quiet period), quiet is the silence the estimate at the last
// arrival needs, and there is no quiet end while the estimate has no rate (no arrivals to rest on).
type schedule struct {
	start, last     time.Time
	prev            time.Time // the previous poll (the baseline before the first)
	quiet, min, max time.Duration
	newConns        int
	auto            *estimator // nil: the fixed quiet period
}

// observe records a poll at now that saw n new connections, and returns the reason the drain
// ends now ("" to go on).
func (s *schedule) observe(now time.Time, n int) Reason {
	if s.auto != nil {
		s.auto.add(now, now.Sub(s.prev), n)
	}
	s.prev = now
	if n > 0 {
		s.newConns += n
		s.last = now
	}
	if !now.Before(s.maxAt()) {
		return ReasonMax
	}
	if !now.Before(s.quietAt()) {
		return ReasonQuiet
	}
	return ""
}

// quietAt is when the drain ends if no new connection arrives before.
func (s *schedule) quietAt() time.Time {
	quiet := s.quiet
	if s.auto != nil {
		if !s.auto.est.Enough {
			return s.maxAt()
		}
		quiet = s.auto.est.Needed
	}
	t := s.last.Add(quiet)
	if m := s.start.Add(s.min); m.After(t) {
		t = m
	}
	return t
}

func (s *schedule) maxAt() time.Time { return s.start.Add(s.max) }

// next is when to poll after a poll at prev, given gap, the least time between polls that the
// CPU budget allows. Polls come every gap; when quietAt falls within the gap after the next
// one, that poll is moved to quietAt, so that the drain ends there rather than up to a gap
// later. Polls never come closer than gap, and never later than maxAt.
func (s *schedule) next(prev time.Time, gap time.Duration) time.Time {
	t := prev.Add(gap)
	if q := s.quietAt(); q.After(t) && q.Before(t.Add(gap)) {
		t = q
	}
	if m := s.maxAt(); t.After(m) {
		t = m
	}
	return t
}

// pollInterval is the shortest time between polls before the CPU budget: base, or with auto
// once the rate is known a quarter of the silence needed, within [AutoMinInterval,
// AutoMaxInterval] (and base at most), so that the drain ends within a quarter of the silence
// needed after its end is due. Before the rate is known, with auto, AutoMinInterval: the
// estimator cannot place the arrivals of the first poll that saw any within it, and sets them
// aside (see estimator.steady), so that poll had better be short.
func (s *schedule) pollInterval(base time.Duration) time.Duration {
	switch {
	case s.auto == nil:
		return base
	case !s.auto.est.Enough:
		return min(base, AutoMinInterval)
	}
	return min(base, AutoMaxInterval, max(AutoMinInterval, s.auto.est.Needed/4))
}
