package config

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Endpoint is a local TCP endpoint whose new connections the drain watches: a port, and the
// address it is bound to. The zero Addr means any address (and so does an unspecified one,
// 0.0.0.0 or ::, as for a listening socket bound to it).
type Endpoint struct {
	Addr netip.Addr
	Port uint16
}

// String gives the endpoint back in the form ParseEndpoint reads: PORT, ADDR:PORT or
// [ADDR]:PORT.
func (e Endpoint) String() string {
	if !e.Addr.IsValid() {
		return strconv.Itoa(int(e.Port))
	}
	return netip.AddrPortFrom(e.Addr, e.Port).String()
}

// Matches reports whether a connection whose local end is addr:port arrived through e. A
// wildcard IPv4 listener only receives IPv4 connections; a wildcard IPv6 one (dual-stack) receives
// both, IPv4 ones with v4-mapped addresses. An IPv6 wildcard listener set IPV6_V6ONLY cannot be
// told apart in the TCP table: it is taken as dual-stack.
func (e Endpoint) Matches(addr netip.Addr, port uint16) bool {
	if port != e.Port {
		return false
	}
	switch {
	case !e.Addr.IsValid(), e.Addr == netip.IPv6Unspecified():
		return true
	case e.Addr == netip.IPv4Unspecified():
		return addr.Unmap().Is4()
	}
	return addr.Unmap() == e.Addr.Unmap()
}

const endpointForms = "want PORT, ADDR:PORT or [IPv6]:PORT, e.g. 8080, 127.0.0.1:8080, [::1]:8080"

// ParseEndpoint reads one --drain-ports entry: PORT (any local address), :PORT (the same),
// ADDR:PORT or [ADDR]:PORT. ADDR is an IP address, not a host name; an IPv6 address needs the
// brackets.
func ParseEndpoint(s string) (Endpoint, error) {
	if s == "" {
		return Endpoint{}, errors.New("empty entry: " + endpointForms)
	}
	if strings.HasSuffix(s, "]") {
		return Endpoint{}, fmt.Errorf("%q: missing port: %s", s, endpointForms)
	}
	addrPart, portPart := "", s
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		addrPart, portPart = s[:i], s[i+1:]
	} else if _, err := netip.ParseAddr(s); err == nil {
		return Endpoint{}, fmt.Errorf("%q: missing port: %s", s, endpointForms)
	}
	port, err := parsePort(portPart)
	if err != nil {
		return Endpoint{}, fmt.Errorf("%q: %w", s, err)
	}
	if addrPart == "" {
		return Endpoint{Port: port}, nil
	}
	if strings.HasPrefix(addrPart, "[") != strings.HasSuffix(addrPart, "]") {
		return Endpoint{}, fmt.Errorf("%q: unbalanced brackets: %s", s, endpointForms)
	}
	bracketed := strings.HasPrefix(addrPart, "[")
	if bracketed {
		addrPart = addrPart[1 : len(addrPart)-1]
	}
	addr, err := netip.ParseAddr(addrPart)
	if err != nil {
		if !bracketed && strings.Contains(addrPart, ":") {
			return Endpoint{}, fmt.Errorf("%q: an IPv6 address needs brackets, e.g. [::1]:8080", s)
		}
		return Endpoint{}, fmt.Errorf("%q: %q is not an IP address (host names are not looked up): %s", s, addrPart, endpointForms)
	}
	switch {
	case addr.Zone() != "":
		return Endpoint{}, fmt.Errorf("%q: IPv6 zones are not supported (the TCP table has none)", s)
	case addr.Is6() && !bracketed:
		return Endpoint{}, fmt.Errorf("%q: an IPv6 address needs brackets, e.g. [::1]:8080", s)
	case addr.Is4() && bracketed:
		return Endpoint{}, fmt.Errorf("%q: brackets are for IPv6 addresses only", s)
	}
	return Endpoint{Addr: addr, Port: port}, nil
}

func parsePort(s string) (uint16, error) {
	if s == "" {
		return 0, errors.New("missing port: " + endpointForms)
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("port %q is not a number: %s", s, endpointForms)
		}
	}
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("port %s out of range 1-65535", s)
	}
	return uint16(n), nil
}

// ParseEndpoints reads a comma-separated list of ParseEndpoint entries (spaces around entries
// are ignored), as --drain-ports takes it. Duplicates are dropped; the order is kept.
func ParseEndpoints(s string) ([]Endpoint, error) {
	var out []Endpoint
	seen := map[Endpoint]bool{}
	for item := range strings.SplitSeq(s, ",") {
		e, err := ParseEndpoint(strings.TrimSpace(item))
		if err != nil {
			return nil, err
		}
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out, nil
}
