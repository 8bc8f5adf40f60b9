package drainwatch

import (
	"context"
	"sync"
	"time"
)

// HistoryEvery is how often a History samples the counter: often enough that the rate before
// the drain is known to a second, rarely enough to cost nothing (one read of /proc/net/snmp,
// ~50 µs, a second: 0.005% of a core).
const HistoryEvery = time.Second

// For its first historyStartFor, a History samples every historyStartEvery: the estimator cannot
// place the arrivals of the oldest bin that holds any within it (a burst at its end, for all it
// says), so a young pod's traffic is as old as the end of its first bin with an arrival. Fine bins
// there keep the traffic of a pod stopped a second or two after it started serving from looking
// younger than it is, at ten reads a second for two seconds.
const (
	historyStartEvery = 100 * time.Millisecond
	historyStartFor   = 2 * time.Second
)

// historyNext is how long after a sample taken since into the History the next one comes.
func historyNext(since time.Duration) time.Duration {
	if since < historyStartFor {
		return historyStartEvery
	}
	return HistoryEvery
}

// History is the traffic before the drain: the network namespace's PassiveOpens counter (less
// what drainit's own servers accepted) sampled every HistoryEvery, for the last AutoWindow. The
// automatic quiet period starts from it, so that it knows the pod's steady rate when the drain
// begins, however few connections come during the drain itself. It is used only when the drain
// counts with the passive-opens method: only then is the counter the app's alone. Safe for
// concurrent use.
type History struct {
	mu      sync.Mutex
	samples []counterSample
	stop    context.CancelFunc
	done    chan struct{} // closed when the sampling goroutine has returned (nil: none)
}

// counterSample is the counter at one moment.
type counterSample struct {
	at         time.Time
	opens, own uint64
}

// Record starts a History in a goroutine of its own; it samples until ctx ends or a drain
// takes it (Config.History). self is Config.SelfAccepted (nil: drainit accepts nothing).
func Record(ctx context.Context, self func() uint64) *History {
	return record(ctx, self, systemCounter(), time.Now, time.After)
}

// record is Record with the counter and the clock given (tests): after(d) fires d from now.
func record(ctx context.Context, self func() uint64, read func() (uint64, error), now func() time.Time,
	after func(time.Duration) <-chan time.Time) *History {
	ctx, cancel := context.WithCancel(ctx)
	h := &History{stop: cancel}
	if read == nil {
		cancel()
		return h
	}
	sample := func() {
		n, err := read()
		if err != nil {
			return
		}
		var own uint64
		if self != nil {
			own = self()
		}
		h.add(counterSample{now(), n, own})
	}
	start := now()
	sample()
	h.done = make(chan struct{})
	go func() {
		defer close(h.done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-after(historyNext(now().Sub(start))):
				sample()
			}
		}
	}()
	return h
}

func (h *History) add(s counterSample) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.samples = append(h.samples, s)
	// One sample more than the window, for the first bin's start (and those of the first
	// seconds, when the samples came closer).
	if keep := int(AutoWindow/HistoryEvery) + int(historyStartFor/historyStartEvery) + 1; len(h.samples) > 2*keep {
		h.samples = append(h.samples[:0], h.samples[len(h.samples)-keep:]...)
	}
}

// take stops the sampling, waits for it to be over, and returns the samples, oldest first.
func (h *History) take() []counterSample {
	if h == nil {
		return nil
	}
	h.stop()
	if h.done != nil {
		<-h.done
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]counterSample(nil), h.samples...)
}

// historyBins turns samples, and the counter at the drain's baseline, into the estimator's
// bins: the arrivals between each sample and the next, less drainit's own accepts (as
// counterSampler counts them).
func historyBins(samples []counterSample, baseline counterSample) []bin {
	all := append(samples, baseline)
	var out []bin
	for i := 1; i < len(all); i++ {
		a, b := all[i-1], all[i]
		span := b.at.Sub(a.at)
		if span <= 0 || b.opens < a.opens {
			continue // a clock or counter gone backwards: not a span to count over
		}
		opened, accepted := b.opens-a.opens, b.own-a.own
		n := 0
		if b.own >= a.own && opened > accepted {
			n = int(opened - accepted)
		}
		out = append(out, bin{b.at, span, n})
	}
	return out
}
