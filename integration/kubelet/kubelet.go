// Package kubelet simulates how the kubelet stops one container, step for step as
// docs/kubelet-stop-sequence.md describes it (kubelet killContainer / executePreStopHook):
//
//	E = the grace period, never below 1 s
//	run the preStop hook; wait until it finishes or E has passed (it is not cancelled)
//	G = max(E - floor(seconds the wait took), 2 s)
//	send the stop signal once, to the container's PID 1
//	wait up to G for PID 1 to exit; then SIGKILL it
//
// The "container" is any process: the tests run drainit as PID 1 of its own PID namespace, which
// shares the host's network, so an exec hook runs on the host and still reaches the container's
// servers on loopback, as a real exec hook does inside the pod.
package kubelet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"syscall"
	"time"
)

// MinimumGracePeriod is the kubelet's floor for the time between the stop signal and SIGKILL.
const MinimumGracePeriod = 2 * time.Second

// PreStop is a container's lifecycle.preStop handler: set Exec or HTTPGet, or neither.
type PreStop struct {
	Exec    []string    // exec: argv, run with no timeout of its own
	HTTPGet string      // httpGet: the URL the kubelet builds from host, port and path
	Headers http.Header // httpGet.httpHeaders
}

// Pod is what the simulator needs of the pod spec and of the delete call.
type Pod struct {
	Grace      time.Duration  // deletionGracePeriodSeconds or terminationGracePeriodSeconds
	PreStop    *PreStop       // nil: none
	StopSignal syscall.Signal // 0: SIGTERM
}

// Container is a running container as the kubelet sees it: the pid of its PID 1 and a channel
// closed once that process has exited (the caller owns the wait).
type Container struct {
	PID    int
	Exited <-chan struct{}
}

// Record is what happened during one stop, with times.
type Record struct {
	Deleted         time.Time     // the stop began
	PreStopEnd      time.Time     // the hook returned, or the kubelet stopped waiting for it
	PreStopErr      error         // the hook failed (the kubelet records FailedPreStopHook and goes on)
	PreStopTimedOut bool          // the kubelet stopped waiting after E
	SignalAt        time.Time     // the stop signal was sent (zero if the container was already gone)
	G               time.Duration // the grace left for the signal-to-SIGKILL wait
	Killed          bool          // the kubelet had to SIGKILL PID 1
	ExitedAt        time.Time     // PID 1 was seen gone
}

// Stop stops c the way the kubelet would, and returns once PID 1 has exited. It never returns
// before that: after SIGKILL the kernel ends the process promptly.
func (p Pod) Stop(c Container) Record {
	r := Record{Deleted: time.Now()}
	e := p.Grace
	if e < time.Second {
		e = time.Second // a force delete with 0 becomes 1
	}
	g := e
	if p.PreStop != nil {
		done := make(chan error, 1)
		go func() { done <- p.PreStop.run() }() // never cancelled, as in the kubelet
		select {
		case r.PreStopErr = <-done:
		case <-time.After(e):
			r.PreStopTimedOut = true
		case <-c.Exited:
		}
		r.PreStopEnd = time.Now()
		g -= time.Duration(int64(r.PreStopEnd.Sub(r.Deleted).Seconds())) * time.Second
	}
	g = max(g, MinimumGracePeriod)
	r.G = g
	sig := cmp.Or(p.StopSignal, syscall.SIGTERM)
	select {
	case <-c.Exited:
		r.ExitedAt = time.Now()
		return r
	default:
	}
	r.SignalAt = time.Now()
	_ = syscall.Kill(c.PID, sig)
	select {
	case <-c.Exited:
	case <-time.After(g):
		r.Killed = true
		_ = syscall.Kill(c.PID, syscall.SIGKILL)
		<-c.Exited
	}
	r.ExitedAt = time.Now()
	return r
}

func (h *PreStop) run() error {
	switch {
	case len(h.Exec) > 0:
		// The kubelet's exec has no timeout of its own; a non-zero exit fails the hook.
		out, err := exec.Command(h.Exec[0], h.Exec[1:]...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("exec preStop %q: %w: %s", h.Exec, err, out)
		}
		return nil
	case h.HTTPGet != "":
		return h.get()
	}
	return nil
}

// get is the kubelet's httpGet handler: no client timeout, the status code never checked (only a
// transport error fails the hook), the body discarded, redirects followed on the same host only.
func (h *PreStop) get() error {
	u, err := url.Parse(h.HTTPGet)
	if err != nil {
		return err
	}
	client := &http.Client{
		Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if req.URL.Host != u.Host {
				return http.ErrUseLastResponse
			}
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			return nil
		},
	}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, h.HTTPGet, nil)
	if err != nil {
		return err
	}
	for k, vs := range h.Headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("User-Agent", "kube-lifecycle/1.34")
	req.Header.Set("Accept", "*/*")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("httpGet preStop %s: %w", h.HTTPGet, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}
