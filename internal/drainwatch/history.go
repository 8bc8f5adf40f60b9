package drainwatch

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/drainit/drainit/internal/config"
)

// HistoryEvery is how often a History samples the counter: often enough that the rate before
// the drain is known to a second, rarely enough to cost nothing (0.005% of a core).
const HistoryEvery = time.Second

// For its first historyStartFor, a History samples every historyStartEvery: the estimator sets
// aside the arrivals of the oldest bin that holds any (they may all be at its end), and fine
// bins there keep a pod stopped a second or two after it started serving from looking younger.
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

// History is the traffic before the drain, sampled every HistoryEvery for the last AutoWindow:
// the network namespace's PassiveOpens counter (less what drainit's own servers accepted), and,
// where the namespace holds listeners that are not the app's (a sidecar's, another pod's on
// hostNetwork), the new connections to the app's own listeners, from sock_diag. The automatic
// quiet period starts from the one that is the app's alone, so that it knows the pod's steady
// rate however few connections come during the drain itself. Safe for concurrent use.
type History struct {
	mu      sync.Mutex
	samples []counterSample
	own     ownHistory // the app's listeners' own counts, where the namespace is shared
	counter appCounter // nil: none (no sock_diag)
	stop    context.CancelFunc
	done    chan struct{} // closed when the sampling goroutine has returned (nil: none)
}

// ownHistory is what a History counted at the app's own listeners.
type ownHistory struct {
	endpoints []config.Endpoint
	samples   []ownSample // oldest first; the first is the baseline (n 0)
}

// ownSample is how many new connections to the app's listeners came since the previous sample.
type ownSample struct {
	at time.Time
	n  int
}

// appCounter counts the new connections to the app's own listeners, for a History in a shared
// network namespace. A snapshot a sample, as the sock-diag method's polls are: a connection that
// came and went between two samples (a second apart) is missed, so the counts are a lower bound
// of the traffic, which only lengthens the silence they lead to.
type appCounter interface {
	// count polls once. shared is false when every listener of the namespace is the app's or
	// drainit's (the counter is then the app's, and nothing is counted); else n is how many new
	// connections came to endpoints since the previous poll (0 for the first poll of a set).
	count() (n int, endpoints []config.Endpoint, shared bool)
	close()
}

// RecordConfig says what a History samples.
type RecordConfig struct {
	// Self is Config.SelfAccepted (nil: drainit accepts nothing).
	Self func() uint64
	// AppPID, Adopter and Ports say what the app's listeners are, as Config's do.
	AppPID, Adopter int
	Ports           []config.Endpoint
}

// counterSample is the counter at one moment.
type counterSample struct {
	at         time.Time
	opens, own uint64
}

// Record starts a History in a goroutine of its own; it samples until ctx ends or a drain
// takes it (Config.History).
func Record(ctx context.Context, rc RecordConfig) *History {
	return record(ctx, rc.Self, systemCounter(), systemAppCounter(rc), time.Now, time.After)
}

// record is Record with the counters and the clock given (tests): after(d) fires d from now.
func record(ctx context.Context, self func() uint64, read func() (uint64, error), app appCounter, now func() time.Time,
	after func(time.Duration) <-chan time.Time) *History {
	ctx, cancel := context.WithCancel(ctx)
	h := &History{stop: cancel, counter: app}
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
		at := now()
		h.add(counterSample{at, n, own})
		h.countOwn(at)
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

// historyKeep is how many samples a History keeps: one more than the window holds, for the
// first bin's start (and those of the first seconds, when the samples came closer).
const historyKeep = int(AutoWindow/HistoryEvery) + int(historyStartFor/historyStartEvery) + 1

// keepRecent is s without its oldest samples, in place, once it holds twice historyKeep.
func keepRecent[T any](s []T) []T {
	if len(s) > 2*historyKeep {
		return append(s[:0], s[len(s)-historyKeep:]...)
	}
	return s
}

func (h *History) add(s counterSample) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.samples = keepRecent(append(h.samples, s))
}

// countOwn polls the app's listeners, where the namespace is shared, at the time at.
func (h *History) countOwn(at time.Time) {
	if h.counter == nil {
		return
	}
	n, eps, shared := h.counter.count()
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case !shared:
		h.own = ownHistory{}
	case !slices.Equal(eps, h.own.endpoints):
		h.own = ownHistory{endpoints: eps, samples: []ownSample{{at, 0}}}
	default:
		h.own.samples = keepRecent(append(h.own.samples, ownSample{at, n}))
	}
}

// take stops the sampling, waits for it to be over, counts the app's listeners once more (now:
// up to the drain's baseline), and returns the samples, oldest first.
func (h *History) take(now time.Time) ([]counterSample, ownHistory) {
	if h == nil {
		return nil, ownHistory{}
	}
	h.stop()
	if h.done != nil {
		<-h.done
	}
	if h.counter != nil {
		h.countOwn(now)
		h.counter.close()
		h.counter = nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]counterSample(nil), h.samples...), ownHistory{h.own.endpoints, slices.Clone(h.own.samples)}
}

// bins turns the own samples into the estimator's bins.
func (o ownHistory) bins() []bin {
	var out []bin
	for i := 1; i < len(o.samples); i++ {
		a, b := o.samples[i-1], o.samples[i]
		if span := b.at.Sub(a.at); span > 0 {
			out = append(out, bin{b.at, span, b.n})
		}
	}
	return out
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
