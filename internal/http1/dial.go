package http1

import (
	"context"
	"net"

	"github.com/drainit/drainit/internal/config"
)

// Dial connects to addr (HOST:PORT) over TCP, as drainit's probe and HTTP calls do. localhost and
// the names under .localhost are the loopback addresses themselves (RFC 6761 6.3), 127.0.0.1 and
// then ::1, without a lookup: an image FROM scratch run without an /etc/hosts (runc, nspawn,
// unshare) would otherwise ask DNS, which says it knows no such name, and a probe of
// tcp://localhost:8080 would fail for ever.
func Dial(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	host, port, err := net.SplitHostPort(addr)
	if err != nil || !config.IsLocalhost(host) {
		return d.DialContext(ctx, "tcp", addr)
	}
	c, err := d.DialContext(ctx, "tcp4", net.JoinHostPort("127.0.0.1", port))
	if err == nil || ctx.Err() != nil {
		return c, err
	}
	if c, err6 := d.DialContext(ctx, "tcp6", net.JoinHostPort("::1", port)); err6 == nil {
		return c, nil
	}
	return nil, err // the IPv4 address's error: what most apps listen on
}
