package rollout

import (
	"strconv"
	"sync"
	"time"

	"github.com/drainit/drainit/integration/testenv"
)

// lateness measures how late the harness's own timers fire during a run: a goroutine sleeps a
// period again and again and keeps the worst overshoot. On an idle machine that is well under a
// millisecond; when other work starves the harness it is what every timestamp the harness takes
// may be off by, so a run with a large one cannot tell a cut from a drop (Balancer.CutAfter),
// a client's timeout from a stall, or a stop time within its bound from one over it.
type lateness struct {
	done   chan struct{}
	once   sync.Once
	mu     sync.Mutex
	worst  time.Duration
	stalls []span // when the timers fired more than stallAfter late
	wg     sync.WaitGroup
}

func watchLateness(period time.Duration) *lateness {
	l := &lateness{done: make(chan struct{})}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		t := time.NewTimer(period)
		defer t.Stop()
		for {
			due := time.Now().Add(period)
			t.Reset(period)
			select {
			case <-l.done:
				return
			case <-t.C:
				// Now, not the time the timer sent: what matters is when this goroutine ran.
				now := time.Now()
				if over := now.Sub(due); over > 0 {
					l.mu.Lock()
					l.worst = max(l.worst, over)
					if over > stallAfter {
						l.stalls = append(l.stalls, span{due, now})
					}
					l.mu.Unlock()
				}
			}
		}
	}()
	return l
}

// stop ends the watch and returns the worst lateness seen, and the stalls.
func (l *lateness) stop() (time.Duration, []span) {
	l.once.Do(func() { close(l.done) })
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.worst, l.stalls
}

// cpuSamples is a process's CPU time (all its threads, from schedstat) sampled every period.
type cpuSamples struct {
	done chan struct{}
	once sync.Once
	wg   sync.WaitGroup
	mu   sync.Mutex
	at   []time.Time
	cpu  []time.Duration
}

func sampleCPU(pid int, period time.Duration) *cpuSamples {
	c := &cpuSamples{done: make(chan struct{})}
	take := func() {
		v := testenv.CPUTime("/proc", pid)
		c.mu.Lock()
		c.at, c.cpu = append(c.at, time.Now()), append(c.cpu, v)
		c.mu.Unlock()
	}
	take()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-c.done:
				return
			case <-t.C:
				take()
			}
		}
	}()
	return c
}

func (c *cpuSamples) stop() {
	c.once.Do(func() { close(c.done) })
	c.wg.Wait()
}

// fraction is the CPU time used between the last sample at or before from and the first at or
// after to, over that time: the share of one core. false when the samples do not span it.
func (c *cpuSamples) fraction(from, to time.Time) (float64, bool) {
	c.stop()
	i, j := -1, -1
	for k, at := range c.at {
		if !at.After(from) {
			i = k
		}
		if j < 0 && !at.Before(to) {
			j = k
		}
	}
	if i < 0 || j <= i || c.cpu[j] == 0 {
		return 0, false
	}
	return float64(c.cpu[j]-c.cpu[i]) / float64(c.at[j].Sub(c.at[i])), true
}

// loadAverage is the one-minute load average (0 if unknown).
func loadAverage() float64 {
	l, err := testenv.LoadAverage("/proc")
	if err != nil {
		return 0
	}
	v, _ := strconv.ParseFloat(l, 64)
	return v
}
