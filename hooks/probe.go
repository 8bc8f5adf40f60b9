package hooks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/drainit/drainit/internal/config"
	"github.com/drainit/drainit/internal/http1"
)

// probeTiming paces the ready probe (WaitReady says how and why); the tests shorten it.
type probeTiming struct {
	timeout, first, max  time.Duration // each attempt's bound; the first pause, doubled up to max
	warnFirst, warnEvery time.Duration // when a wait without success is a warning
}

var defaultTiming = probeTiming{
	timeout: time.Second, first: 10 * time.Millisecond, max: time.Second,
	warnFirst: 10 * time.Second, warnEvery: time.Minute,
}

// Probe asks once whether the app is ready.
type Probe interface {
	// Check returns nil when the app is ready, otherwise why not. It returns by the time ctx
	// ends.
	Check(ctx context.Context) error
	// String is the probe as the user gave it, for the log.
	String() string
}

// NewProbe is ready probe p (config.ParseProbe). Probes never use a proxy: they check the app
// next to drainit.
func NewProbe(p config.Probe) Probe { return probe{p} }

// LocalTarget is the address probe p (made by NewProbe) connects to when it is in this network
// namespace: an empty host, localhost or an unspecified address (the loopback), a loopback
// address, or an address of one of the interfaces. Other hosts, names included, are not looked at.
func LocalTarget(p Probe) (netip.AddrPort, bool) {
	if p, ok := p.(probe); ok {
		return localTarget(p.Addr())
	}
	return netip.AddrPort{}, false
}

func localTarget(hostport string) (netip.AddrPort, bool) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return netip.AddrPort{}, false
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return netip.AddrPort{}, false
	}
	if host == "" || config.IsLocalhost(host) {
		host = "127.0.0.1" // as http1.Dial tries first
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.AddrPort{}, false
	}
	a = a.Unmap()
	switch {
	case a.IsUnspecified() && a.Is4():
		a = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	case a.IsUnspecified():
		a = netip.IPv6Loopback()
	case a.IsLoopback():
	default:
		addrs, _ := net.InterfaceAddrs()
		if !slices.ContainsFunc(addrs, func(ia net.Addr) bool {
			pfx, err := netip.ParsePrefix(ia.String())
			return err == nil && pfx.Addr().Unmap() == a.WithZone("")
		}) {
			return netip.AddrPort{}, false
		}
	}
	return netip.AddrPortFrom(a, uint16(n)), true
}

// probe is ready when it can connect (tcp://), or on a 2xx answer to a GET (http://).
type probe struct{ config.Probe }

func (p probe) Check(ctx context.Context) error {
	if p.URL == nil {
		c, err := http1.Dial(ctx, p.TCP)
		if err != nil {
			return err
		}
		return c.Close()
	}
	res, err := http1.Do(ctx, http1.Call{Method: "GET", URL: p.URL.String(), SuccessHeadOnly: true})
	if err != nil {
		return err
	}
	if res.Status < 200 || res.Status > 299 {
		return fmt.Errorf("status %s", statusText(res.Status))
	}
	return nil
}

// WaitReady checks p until it passes or ctx ends, pausing between attempts with a back-off
// that doubles from 10ms to at most 1s, so that a fast app is seen ready within milliseconds and
// a slow one is not hammered; each attempt is bounded by 1s. It returns nil once the app is ready
// (logged at info), or an error wrapping ctx's cause and the last attempt's error (the last one
// ctx did not cut short). Failed attempts are logged at debug; after 10s without success, and
// then every minute, a warning says how long it has waited and why: a probe aimed at the wrong
// port would otherwise fail in silence for ever.
func WaitReady(ctx context.Context, p Probe, log zerolog.Logger) error {
	return waitReady(ctx, p, log, defaultTiming)
}

func waitReady(ctx context.Context, p Probe, log zerolog.Logger, tm probeTiming) error {
	start := time.Now()
	pause := tm.first
	nextWarn := start.Add(tm.warnFirst)
	var last error
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, tm.timeout)
		err := p.Check(actx)
		cancel()
		if err == nil {
			log.Info().Str("probe", p.String()).Int("attempts", attempt).Dur("took", time.Since(start)).Msg("ready probe passed")
			return nil
		}
		log.Debug().Str("probe", p.String()).Int("attempt", attempt).Err(err).Msg("app not ready yet")
		// An attempt cut short by the end of ctx says less than the one before it. The dial may
		// see the deadline a moment before ctx reports it.
		d, ok := ctx.Deadline()
		if cut := ctx.Err() != nil || ok && !time.Now().Before(d); last == nil || !cut {
			last = err
		}
		if ctx.Err() == nil {
			if now := time.Now(); !now.Before(nextWarn) {
				log.Warn().Str("probe", p.String()).Int("attempts", attempt).Dur("waited", now.Sub(start)).Err(last).
					Msg("app still not ready: /readyz answers 503 until the ready probe passes")
				nextWarn = now.Add(tm.warnEvery)
			}
			select {
			case <-time.After(pause):
				pause = min(2*pause, tm.max)
				continue
			case <-ctx.Done():
			}
		}
		return fmt.Errorf("ready probe %s: not ready after %d attempts (last: %w): %w",
			p, attempt, last, ended(ctx, time.Since(start)))
	}
}

// Once the app is ready, the probe goes on every WatchEvery (each attempt within a second), and
// WatchFailures failed attempts in a row make it not ready again: the kubelet's readiness probe
// goes on for the pod's life, and an app that stops answering must leave the Service's endpoints
// when the kubelet probes drainit's /readyz instead of the app.
const (
	WatchEvery    = time.Second
	WatchFailures = 3
)

// WatchReady checks p every `every`, from an app that is ready, until ctx ends. It calls report
// with false after `failures` failed checks in a row, and with true at the next check that
// passes; each change is logged (a warning with the last error when the app stops answering).
func WatchReady(ctx context.Context, p Probe, log zerolog.Logger, every time.Duration, failures int, report func(ready bool)) {
	t := time.NewTicker(every)
	defer t.Stop()
	ready, failed := true, 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		actx, cancel := context.WithTimeout(ctx, defaultTiming.timeout)
		err := p.Check(actx)
		cancel()
		if ctx.Err() != nil {
			return // cut short: it says nothing about the app
		}
		switch {
		case err == nil && !ready:
			ready, failed = true, 0
			log.Info().Str("probe", p.String()).Msg("ready probe passes again: /readyz answers 200")
			report(true)
		case err == nil:
			failed = 0
		case ready:
			log.Debug().Str("probe", p.String()).Int("failed", failed+1).Err(err).Msg("ready probe failed")
			if failed++; failed >= failures {
				ready = false
				log.Warn().Str("probe", p.String()).Int("failed", failed).Err(err).
					Msg("app no longer ready: /readyz answers 503 until the ready probe passes again")
				report(false)
			}
		}
	}
}

// Reached reports whether a probe's attempt that ended with err got through to the app: it
// passed, or it connected and then failed (an HTTP status, a malformed answer, a timeout after
// the connection). Only an attempt whose connection was never made did not.
func Reached(err error) bool {
	var oe *net.OpError
	return err == nil || !errors.As(err, &oe) || oe.Op != "dial"
}
