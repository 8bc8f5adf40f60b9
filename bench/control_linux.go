package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/drainit/drainit/integration/slowclient"
	"github.com/drainit/drainit/integration/testenv"
)

// slowConns is the figure: one client holding 300 slow connections.
const slowConns = 300

// control measures how long drainit's control server takes to answer the kubelet's requests,
// with no other client and with a client holding slowConns slow connections from another
// loopback address and from the kubelet's own.
func (b *bench) control(c counts) error {
	var spec *initSpec
	for _, s := range b.inits {
		if s.col.name == "drainit" {
			spec = s
		}
	}
	res := &controlResults{date: time.Now(), load: loadavg(), quick: b.o.quick, conns: slowConns, gap: (25 * time.Millisecond).Seconds()}
	b.res.control = res
	if spec == nil {
		res.failed = "no drainit to measure"
		return nil
	}
	// The slow client allocates for every connection it re-opens: the garbage collector the
	// benchmark turns off for its timed phases must run here.
	defer debug.SetGCPercent(debug.SetGCPercent(100))

	port, err := freePort()
	if err != nil {
		return err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	argv := append([]string{spec.path, "--http-addr", addr, "--"}, "/bin/sleep", "1000000")
	launched, err := b.launch(argv, []uintptr{uintptr(b.devnull), uintptr(b.devnull), uintptr(b.devnull)})
	if err != nil {
		return fmt.Errorf("start drainit with its control server: %w", err)
	}
	init := 0
	defer func() { stop(launched, init) }()
	if init, err = b.initPid(launched); err != nil {
		return err
	}
	if err := waitHealthy(addr, 10*time.Second); err != nil {
		res.failed = fmt.Sprintf("drainit's control server did not answer: %v", err)
		b.note(res.failed)
		return nil
	}

	n := 400 // 10 s at one request per 25 ms: the slow client's connections expire several times
	if b.o.quick {
		n = 120
	}
	kubelet := net.IPv4(127, 0, 0, 1)
	for _, k := range []struct {
		label string
		from  net.IP // the slow client's address; nil: no slow client
	}{
		{"no other client", nil},
		{fmt.Sprintf("%d slow connections from another address (127.0.0.2)", slowConns), net.IPv4(127, 0, 0, 2)},
		{fmt.Sprintf("%d slow connections from the kubelet's address (127.0.0.1)", slowConns), kubelet},
	} {
		progress(fmt.Sprintf("control server: %d requests, %s", n, k.label))
		var atk *slowclient.Client
		if k.from != nil {
			atk = slowclient.Start(slowclient.Config{Addr: addr, From: k.from, Conns: slowConns})
			deadline := time.Now().Add(10 * time.Second)
			for atk.Dials() < slowConns && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
		}
		cs := askControl(addr, kubelet, n, time.Duration(res.gap*float64(time.Second)), init, atk)
		cs.label = k.label
		if atk != nil {
			atk.Stop()
		}
		res.cases = append(res.cases, cs)
	}
	return nil
}

// askControl makes n requests from `from`, one every gap, and sums up their answers.
func askControl(addr string, from net.IP, n int, gap time.Duration, init int, atk *slowclient.Client) controlCase {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: from}}
	var dials0 int64
	if atk != nil {
		dials0 = atk.Dials()
	}
	cpu0, t0 := testenv.CPUTime("/proc", init), time.Now()
	samples := make([]time.Duration, 0, n)
	cs := controlCase{asked: n}
	tick := time.NewTicker(gap)
	defer tick.Stop()
	for range n {
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
		start := time.Now()
		resp, err := client.Get("http://" + addr + "/healthz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		took := time.Since(start)
		samples = append(samples, took)
		switch {
		case err == nil && resp.StatusCode == 200:
			cs.answered++
			if took > time.Second {
				cs.late++
			}
		case len(cs.errs) < 3 && err != nil:
			cs.errs = append(cs.errs, fmt.Sprintf("after %s: %v", fmtValue(metricTime, took.Seconds()), err))
		case len(cs.errs) < 3:
			cs.errs = append(cs.errs, fmt.Sprintf("after %s: status %d", fmtValue(metricTime, took.Seconds()), resp.StatusCode))
		}
		<-tick.C
	}
	cs.span = time.Since(t0).Seconds()
	cs.cpu = (testenv.CPUTime("/proc", init) - cpu0).Seconds()
	if atk != nil {
		cs.dials = atk.Dials() - dials0
	}
	cs.p50, cs.p99 = percentile(samples, 50).Seconds(), percentile(samples, 99).Seconds()
	cs.max = samples[len(samples)-1].Seconds() // percentile sorted them
	cs.rss, _ = statusKB(init, "VmRSS")
	return cs
}

// waitHealthy polls addr's /healthz until it answers 200.
func waitHealthy(addr string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var last error
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/healthz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		last = err
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("nothing within %v: %w", within, errors.Join(last, ctx.Err()))
}

// freePort is a TCP port free on loopback a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
