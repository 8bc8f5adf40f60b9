package drainwatch

import "github.com/drainit/drainit/internal/config"

// counterSampler counts new connections as the growth of the network namespace's PassiveOpens
// counter: every connection a listening socket of the namespace completed the handshake for,
// whether or not it was accepted, however soon it closed. It is only right when every listener
// in the namespace is watched, or is drainit's own and self counts what drainit accepted.
type counterSampler struct {
	endpoints []config.Endpoint
	read      func() (uint64, error) // PassiveOpens
	self      func() uint64          // connections drainit accepted; nil: none
	last      uint64
	lastSelf  uint64
	primed    bool
}

func (s *counterSampler) sample() (int, error) {
	n, err := s.read()
	if err != nil {
		return 0, err
	}
	var mine uint64
	if s.self != nil {
		mine = s.self()
	}
	defer func() { s.last, s.lastSelf, s.primed = n, mine, true }()
	if !s.primed {
		return 0, nil
	}
	if n < s.last {
		// The counter went backwards (an unsigned long wrapping on a 32-bit kernel, or another
		// namespace's counter): how many arrived is unknown, and the difference would be negative
		// or in the billions. One arrival only lengthens the drain.
		return 1, nil
	}
	opened, accepted := n-s.last, mine-s.lastSelf
	if accepted >= opened {
		// drainit accepts a connection after the kernel counts it, so a poll can see the accept
		// of one the previous poll counted already; that one was counted as the app's then.
		return 0, nil
	}
	return int(opened - accepted), nil
}

// counter is the last reading: the counter, and what drainit had accepted.
func (s *counterSampler) counter() (opens, own uint64) { return s.last, s.lastSelf }

func (s *counterSampler) method() Method             { return MethodPassiveOpens }
func (s *counterSampler) watched() []config.Endpoint { return s.endpoints }
func (s *counterSampler) close()                     {}
