package rollout

import (
	"bufio"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

func answer(c net.Conn, status string, keepAlive bool) error {
	conn := "close"
	if keepAlive {
		conn = "keep-alive"
	}
	_, err := io.WriteString(c, "HTTP/1.1 "+status+"\r\nContent-Length: 3\r\nConnection: "+conn+"\r\n\r\nok\n")
	return err
}

func TestClientKinds(t *testing.T) {
	tests := []struct {
		name  string
		serve func(net.Conn)
		want  Kind
	}{
		{"2xx", func(c net.Conn) {
			defer c.Close()
			_ = readRequest(bufio.NewReader(c))
			_ = answer(c, "200 OK", false)
		}, ""},
		{"non-2xx", func(c net.Conn) {
			defer c.Close()
			_ = readRequest(bufio.NewReader(c))
			_ = answer(c, "503 Service Unavailable", false)
		}, Non2xx},
		{"reset", func(c net.Conn) {
			_ = readRequest(bufio.NewReader(c))
			reset(c)
		}, Reset},
		{"EOF", func(c net.Conn) {
			_ = readRequest(bufio.NewReader(c))
			c.Close()
		}, EOF},
		{"EOF mid-answer", func(c net.Conn) {
			_ = readRequest(bufio.NewReader(c))
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nok")
			c.Close()
		}, EOF},
		{"timeout", func(c net.Conn) {
			defer c.Close()
			_ = readRequest(bufio.NewReader(c))
			_, _ = io.Copy(io.Discard, c) // never answers; ends when the client gives up
		}, Timeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &client{addr: backend(t, tt.serve), timeout: 300 * time.Millisecond}
			res := c.do()
			if res.kind != tt.want || (tt.want == "") != (res.err == nil) {
				t.Fatalf("kind %q, err %v; want kind %q", res.kind, res.err, tt.want)
			}
		})
	}
	t.Run("refused", func(t *testing.T) {
		c := &client{addr: deadEndpoint(t), timeout: time.Second}
		if res := c.do(); res.kind != Refused {
			t.Fatalf("kind %q, err %v; want refused", res.kind, res.err)
		}
	})
}

// The keep-alive client reuses its connection, and retries once, on a fresh connection, a request
// the server dropped on a reused connection before answering; a request that fails on a fresh
// connection is a failure, not retried.
func TestKeepAliveRetry(t *testing.T) {
	var conns atomic.Int64
	ep := backend(t, func(c net.Conn) {
		defer c.Close()
		br := bufio.NewReader(c)
		if conns.Add(1) > 10 {
			_ = readRequest(br) // from the tenth connection on: drop every request
			return
		}
		if readRequest(br) != nil || answer(c, "200 OK", true) != nil {
			return
		}
		_ = readRequest(br) // the second request on a connection is dropped
	})
	l := &Load{Addr: ep, KeepAliveClients: 1, KeepAliveRate: 200, Timeout: testDeadline}
	run := l.Start()
	deadline := time.Now().Add(testDeadline)
	for conns.Load() <= 11 {
		if time.Now().After(deadline) {
			run.Stop()
			t.Fatal("the load did not open 11 connections in 10s")
		}
		time.Sleep(time.Millisecond)
	}
	st := run.Stop()
	if st.Succeeded < 5 {
		t.Fatalf("%d requests succeeded, want at least 5 (every retry of the first ten connections)", st.Succeeded)
	}
	if st.Retried < st.Succeeded-1 {
		t.Fatalf("%d retries for %d successes: every success after the first came from a retry", st.Retried, st.Succeeded)
	}
	if len(st.Failures) == 0 {
		t.Fatal("no failure once every request was dropped")
	}
	for _, f := range st.Failures {
		if f.Kind != EOF || f.Mode != KeepAlive {
			t.Fatalf("failure %+v, want an EOF in keep-alive mode", f)
		}
	}
	if got := st.KeepAliveRequests; got != st.Succeeded+len(st.Failures) {
		t.Fatalf("%d requests, %d succeeded, %d failed: a retry counted as a request of its own", got, st.Succeeded, len(st.Failures))
	}
}

func TestNewConnLoad(t *testing.T) {
	var conns atomic.Int64
	ep := backend(t, func(c net.Conn) {
		defer c.Close()
		conns.Add(1)
		if readRequest(bufio.NewReader(c)) == nil {
			_ = answer(c, "200 OK", true) // the client asked to close: it must not reuse
		}
	})
	l := &Load{Addr: ep, Rate: 200, Timeout: testDeadline}
	run := l.Start()
	deadline := time.Now().Add(testDeadline)
	for run.Succeeded() < 10 {
		if time.Now().After(deadline) {
			run.Stop()
			t.Fatal("fewer than 10 requests in 10s")
		}
		time.Sleep(time.Millisecond)
	}
	st := run.Stop()
	if len(st.Failures) != 0 || st.NewConnRequests != st.Succeeded {
		t.Fatalf("%d requests, %d succeeded, failures %+v", st.NewConnRequests, st.Succeeded, st.Failures)
	}
	if int(conns.Load()) != st.NewConnRequests {
		t.Fatalf("%d connections for %d requests, want one each", conns.Load(), st.NewConnRequests)
	}
}
