package rollout

import (
	"slices"
	"time"
)

// stallAfter is the lateness from which a timer that fires late, or a request the load
// generator starts late, marks a stall of the harness: an interval in which it may have sent
// the pods nothing, whatever the load asked for.
const stallAfter = 5 * time.Millisecond

// span is an interval of time.
type span struct{ from, to time.Time }

// overlap is how much of [from, to] the spans cover (they may overlap each other).
func overlap(spans []span, from, to time.Time) time.Duration {
	var cut []span
	for _, s := range spans {
		a, b := s.from, s.to
		if a.Before(from) {
			a = from
		}
		if b.After(to) {
			b = to
		}
		if b.After(a) {
			cut = append(cut, span{a, b})
		}
	}
	slices.SortFunc(cut, func(x, y span) int { return x.from.Compare(y.from) })
	var total time.Duration
	var end time.Time
	for _, s := range cut {
		if s.from.Before(end) {
			s.from = end
		}
		if s.to.After(s.from) {
			total += s.to.Sub(s.from)
			end = s.to
		}
	}
	return total
}
