package control

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/drainit/drainit/integration/slowclient"
	"github.com/drainit/drainit/integration/testenv"
)

// On Linux the whole of 127.0.0.0/8 is local, so the tests play the kubelet and an attacker at
// distinct loopback addresses.
var (
	kubeletIP  = net.IPv4(127, 0, 0, 1)
	attackerIP = net.IPv4(127, 0, 0, 2)
)

const (
	attackConns = 300 // the figure: one client holding 300 slow connections
	// answerWithin is what the kubelet allows a probe by default (timeoutSeconds: 1).
	answerWithin = time.Second
	// oldReadTimeout is how long the server used to let an idle connection keep its slot: a
	// test runs over at least that long, so that an attacker's connections expire and are
	// re-opened at least once while it asks.
	oldReadTimeout = 5 * time.Second
)

// underAttack serves the production configuration (New's defaults) on 127.0.0.1 with a client
// at from holding attackConns slow connections to it. It returns the server's address once the
// attacker has opened them all.
func underAttack(t *testing.T, from net.IP) (string, *lockedBuffer) {
	t.Helper()
	return underAttackBy(t, from, attackConns)
}

// underAttackBy is underAttack with conns slow connections. It returns the server's address and
// its log.
func underAttackBy(t *testing.T, from net.IP, conns int) (string, *lockedBuffer) {
	t.Helper()
	if runtime.GOOS != "linux" {
		testenv.SkipElsewhere(t, "needs Linux: the test uses several loopback source addresses (127.0.0.2, …)")
	}
	b := &fakeBackend{
		prestop: func(context.Context) (Status, error) { return Status{Phase: "drained", Drained: true}, nil },
		status:  running(true, false),
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	srv := New(b, "", time.Second, zerolog.New(logs))
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	addr := ln.Addr().String()
	atk := slowclient.Start(slowclient.Config{Addr: addr, From: from, Conns: conns})
	t.Cleanup(func() {
		atk.Stop()
		t.Logf("attacker: %d connections opened, %d dial errors", atk.Dials(), atk.DialErrors())
	})
	deadline := time.Now().Add(10 * time.Second)
	for atk.Dials() < int64(conns) {
		if time.Now().After(deadline) {
			t.Fatalf("the attacker opened only %d connections in 10 s (%d dial errors)", atk.Dials(), atk.DialErrors())
		}
		time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
	}
	return addr, logs
}

// lockedBuffer is a log sink the server's goroutines may write to at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// sheds counts the server's warnings that it is closing connections to make room.
func (b *lockedBuffer) sheds() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.buf.String(), "closing connections that send no request")
}

// ask sends the kubelet's request from the given address, as the kubelet does (Go's HTTP
// client, a new connection each time), and returns the status and how long the answer took.
func ask(from net.IP, addr, method, path string) (int, time.Duration, error) {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: from}}
	client := &http.Client{
		// Longer than answerWithin, so that a late answer is measured rather than cut.
		Timeout:   3 * answerWithin,
		Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true},
	}
	defer client.CloseIdleConnections()
	req, err := http.NewRequest(method, "http://"+addr+path, nil)
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("User-Agent", "kube-probe/1.33")
	t0 := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, time.Since(t0), err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, time.Since(t0), nil
}

// askRepeatedly makes n requests spread over span (/healthz, /readyz and /prestop in turn) and
// fails the test for each one not answered 200 within answerWithin.
func askRepeatedly(t *testing.T, from net.IP, addr string, n int, span time.Duration) {
	t.Helper()
	paths := []struct{ method, path string }{{"GET", "/healthz"}, {"GET", "/readyz"}, {"GET", "/prestop"}}
	tick := time.NewTicker(span / time.Duration(n))
	defer tick.Stop()
	var worst time.Duration
	var failed []string
	for i := range n {
		p := paths[i%len(paths)]
		code, d, err := ask(from, addr, p.method, p.path)
		worst = max(worst, d)
		if err != nil || code != 200 || d > answerWithin {
			failed = append(failed, fmt.Sprintf("request %d %s %s: status %d after %v, error %v", i+1, p.method, p.path, code, d.Round(time.Millisecond), err))
		}
		<-tick.C // pacing the requests over span, as a probe's period does
	}
	if len(failed) > 0 {
		t.Errorf("%d of %d requests from %v not answered 200 within %v:\n%s", len(failed), n, from, answerWithin, strings.Join(failed, "\n"))
	}
	t.Logf("%d requests from %v, slowest answer %v", n, from, worst.Round(time.Microsecond))
}

// One client holding 300 slow connections (idle, or sending its head a byte at a time, each
// re-opened as soon as it is closed) must not lock the kubelet out: its probes and preStop,
// from another address, are each answered within the probe's default timeout, all through a
// period longer than the server's old read timeout.
func TestSlowClientsCannotLockOutOthers(t *testing.T) {
	addr, logs := underAttack(t, attackerIP)
	askRepeatedly(t, kubeletIP, addr, 20, oldReadTimeout+oldReadTimeout/10)
	// 300 connections fit: nothing was closed to make room (the kubelet's connection could have
	// been).
	if n := logs.sheds(); n != 0 {
		t.Errorf("the server warned %d times that it shed connections, with room for all", n)
	}
}

// The attacker may share the kubelet's address: another process in the pod on loopback, or on
// the node with a hostNetwork pod. The kubelet's request, sent with its connection, is still
// answered within a second.
func TestSlowClientsAtTheSameAddressCannotLockOutOthers(t *testing.T) {
	addr, logs := underAttack(t, kubeletIP)
	askRepeatedly(t, kubeletIP, addr, 10, headerTimeout+headerTimeout/4)
	if n := logs.sheds(); n != 0 {
		t.Errorf("the server warned %d times that it shed connections, with room for all", n)
	}
}

// A client holding more connections than the server takes keeps it full: a newcomer from
// another address then has one of the client's connections shed for it, past that connection's
// grace, and is still answered within a second. The operator hears of it once, not once per
// connection shed.
func TestMoreSlowClientsThanTheServerHoldsCannotLockOutOthers(t *testing.T) {
	t0 := time.Now()
	addr, logs := underAttackBy(t, attackerIP, maxConns+100)
	askRepeatedly(t, kubeletIP, addr, 10, headerTimeout+headerTimeout/4)
	if n, most := logs.sheds(), 1+int(time.Since(t0)/shedLogEvery); n < 1 || n > most {
		t.Errorf("the server warned %d times that it shed connections, want 1 to %d: once per %v", n, most, shedLogEvery)
	}
}
