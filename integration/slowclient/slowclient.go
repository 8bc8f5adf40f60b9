// Package slowclient is a hostile HTTP client, for the control server's tests and the
// benchmark: from one source address it holds many connections that never finish a request.
// Half stay idle after connecting; the other half send a request head a byte at a time and
// never end it (the "slowloris" pattern). A connection the server closes is re-opened at once,
// so the client keeps holding as many as the server lets it, as a real attacker would.
//
// On Linux every address of 127.0.0.0/8 is local (the kernel routes the whole block to lo), so
// one machine can play clients at several addresses: 127.0.0.2 for the attacker, 127.0.0.1 for
// the kubelet, say.
package slowclient

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Config describes an attack.
type Config struct {
	Addr  string // the server, host:port
	From  net.IP // source address of every connection; nil: the system's choice
	Conns int    // connections to hold
}

// tricklePause is the pause between two bytes of a trickling connection. It is also how often an
// idle connection checks whether the attack is over.
const tricklePause = 200 * time.Millisecond

// Client is an attack under way.
type Client struct {
	cfg   Config
	stop  chan struct{}
	wg    sync.WaitGroup
	dials atomic.Int64
	fails atomic.Int64
}

// head is what a trickling connection sends, a byte at a time; then it goes on with 'a's,
// slowly enough never to reach a server's header size limit.
const head = "GET /healthz HTTP/1.1\r\nHost: drainit\r\nUser-Agent: slowclient\r\nX-Slow: "

// Start opens cfg.Conns connections and keeps them open until Stop.
func Start(cfg Config) *Client {
	c := &Client{cfg: cfg, stop: make(chan struct{})}
	for i := range cfg.Conns {
		c.wg.Add(1)
		go c.hold(i%2 == 1)
	}
	return c
}

// Dials is how many connections have been opened so far, re-opened ones included.
func (c *Client) Dials() int64 { return c.dials.Load() }

// DialErrors is how many connection attempts failed.
func (c *Client) DialErrors() int64 { return c.fails.Load() }

// Stop closes every connection and returns once they are closed.
func (c *Client) Stop() {
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	c.wg.Wait()
}

func (c *Client) stopped() bool {
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}

// hold keeps one connection open, re-opening it whenever the server closes it.
func (c *Client) hold(trickle bool) {
	defer c.wg.Done()
	d := net.Dialer{Timeout: 5 * time.Second}
	if c.cfg.From != nil {
		d.LocalAddr = &net.TCPAddr{IP: c.cfg.From}
	}
	for !c.stopped() {
		conn, err := d.Dial("tcp", c.cfg.Addr)
		if err != nil {
			c.fails.Add(1)
			// Out of ports or refused: pause rather than spin, so that the attack does not
			// turn into a busy loop of failing system calls.
			select {
			case <-c.stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		c.dials.Add(1)
		c.slow(conn, trickle)
		conn.Close()
	}
}

// slow holds conn until the server closes it or the attack stops.
func (c *Client) slow(conn net.Conn, trickle bool) {
	buf := make([]byte, 512)
	sent := 0
	for !c.stopped() {
		if trickle {
			b := byte('a')
			if sent < len(head) {
				b = head[sent]
			}
			if _, err := conn.Write([]byte{b}); err != nil {
				return
			}
			sent++
		}
		_ = conn.SetReadDeadline(time.Now().Add(tricklePause))
		// Anything the server sends (a 408, say) or an EOF or a reset ends this connection: it
		// is re-opened.
		if _, err := conn.Read(buf); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
		}
		return
	}
}
