package drainwatch

import "testing"

func TestCounterSampler(t *testing.T) {
	var opens, accepted uint64
	s := &counterSampler{read: func() (uint64, error) { return opens, nil }, self: func() uint64 { return accepted }}
	for i, step := range []struct {
		opens, accepted uint64
		want            int
	}{
		{1000, 7, 0}, // the baseline
		{1000, 7, 0},
		{1004, 7, 4},  // four connections to the app
		{1007, 9, 1},  // three, two of them to drainit's control server
		{1008, 9, 1},  // one more, drainit's, not accepted yet: counted as the app's ...
		{1008, 10, 0}, // ... and its accept a poll later does not take one off later connections
		{1010, 10, 2},
	} {
		opens, accepted = step.opens, step.accepted
		if got, err := s.sample(); err != nil || got != step.want {
			t.Errorf("poll %d (PassiveOpens %d, drainit accepted %d): %d, %v; want %d", i, step.opens, step.accepted, got, err, step.want)
		}
	}
	// Without drainit's own listener, every passive open is the app's.
	s = &counterSampler{read: func() (uint64, error) { return opens, nil }}
	_, _ = s.sample()
	opens += 3
	if got, _ := s.sample(); got != 3 {
		t.Errorf("no self counter: %d new, want 3", got)
	}
}

// A counter that goes backwards (a 32-bit unsigned long wrapping on a 32-bit kernel, or a
// reading from another network namespace) cannot say how many arrived. The poll counts one
// arrival, so that the quiet period starts over, never a negative or an enormous number, which
// would hide the arrivals from the schedule or make the automatic quiet period's rate absurd.
func TestCounterSamplerBackwards(t *testing.T) {
	var opens uint64
	s := &counterSampler{read: func() (uint64, error) { return opens, nil }}
	for i, step := range []struct {
		opens uint64
		want  int
	}{
		{1<<32 - 3, 0}, // the baseline, just under a 32-bit wrap
		{1<<32 - 1, 2},
		{4, 1}, // wrapped: five arrived, but a reset looks the same
		{6, 2}, // and the count goes on from the new reading
		{1 << 40, 1<<40 - 6},
		{10, 1}, // a 64-bit counter gone backwards: a reset
	} {
		opens = step.opens
		if got, err := s.sample(); err != nil || got != step.want {
			t.Errorf("poll %d (PassiveOpens %d): %d, %v; want %d", i, step.opens, got, err, step.want)
		}
	}
}
