package config

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

func TestParseEndpoint(t *testing.T) {
	a := netip.MustParseAddr
	for _, tc := range []struct {
		in   string
		want Endpoint
	}{
		{"8080", Endpoint{Port: 8080}},
		{":8080", Endpoint{Port: 8080}},
		{"1", Endpoint{Port: 1}},
		{"65535", Endpoint{Port: 65535}},
		{"127.0.0.1:8080", Endpoint{a("127.0.0.1"), 8080}},
		{"0.0.0.0:80", Endpoint{a("0.0.0.0"), 80}},
		{"[::1]:8443", Endpoint{a("::1"), 8443}},
		{"[::]:8080", Endpoint{a("::"), 8080}},
		{"[::ffff:10.0.0.1]:80", Endpoint{a("::ffff:10.0.0.1"), 80}},
	} {
		got, err := ParseEndpoint(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseEndpoint(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseEndpointErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "empty entry"},
		{"http", `port "http" is not a number`},
		{"0", "out of range"},
		{"65536", "out of range"},
		{"-1", "not a number"},
		{"+80", "not a number"},
		{"127.0.0.1:", "missing port"},
		{"127.0.0.1", "missing port"},
		{"::1:8080", "needs brackets"},
		{"::1", "needs brackets"},
		{"[::1]", "missing port"},
		{"[::1:8080", "unbalanced brackets"},
		{"::1]:8080", "unbalanced brackets"},
		{"[127.0.0.1]:80", "brackets are for IPv6"},
		{"[fe80::1%eth0]:80", "zones are not supported"},
		{"localhost:8080", "not an IP address"},
		{"1.2.3:80", "not an IP address"},
	} {
		_, err := ParseEndpoint(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseEndpoint(%q) error = %v; want it to say %q", tc.in, err, tc.want)
		}
	}
}

func TestParseEndpoints(t *testing.T) {
	got, err := ParseEndpoints(" 8080, [::1]:9090,8080 ,127.0.0.1:81")
	want := []Endpoint{{Port: 8080}, {netip.MustParseAddr("::1"), 9090}, {netip.MustParseAddr("127.0.0.1"), 81}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseEndpoints = %v, %v; want %v", got, err, want)
	}
	if _, err := ParseEndpoints("8080,,9090"); err == nil || !strings.Contains(err.Error(), "empty entry") {
		t.Errorf("an empty entry: error %v", err)
	}
	if _, err := ParseEndpoints("8080,x"); err == nil || !strings.Contains(err.Error(), `"x"`) {
		t.Errorf("a bad entry: error %v, want it named", err)
	}
}

func TestEndpointMatches(t *testing.T) {
	a := netip.MustParseAddr
	for _, tc := range []struct {
		ep   string
		addr string
		port uint16
		want bool
	}{
		{"8080", "10.0.0.1", 8080, true},
		{"8080", "::1", 8080, true},
		{"8080", "10.0.0.1", 8081, false},
		{"0.0.0.0:8080", "10.0.0.1", 8080, true},
		{"0.0.0.0:8080", "::ffff:10.0.0.1", 8080, true},
		{"0.0.0.0:8080", "::1", 8080, false}, // an IPv4 wildcard gets no IPv6 connection
		{"[::]:8080", "::1", 8080, true},
		{"[::]:8080", "::ffff:127.0.0.1", 8080, true}, // dual-stack
		{"127.0.0.2:8080", "127.0.0.2", 8080, true},
		{"127.0.0.2:8080", "::ffff:127.0.0.2", 8080, true},
		{"127.0.0.2:8080", "127.0.0.3", 8080, false}, // another pod on the same port
		{"[::ffff:127.0.0.2]:8080", "127.0.0.2", 8080, true},
		{"[::1]:8080", "::2", 8080, false},
	} {
		ep, err := ParseEndpoint(tc.ep)
		if err != nil {
			t.Fatal(err)
		}
		if got := ep.Matches(a(tc.addr), tc.port); got != tc.want {
			t.Errorf("%s matches %s:%d = %v, want %v", tc.ep, tc.addr, tc.port, got, tc.want)
		}
	}
}

func FuzzParseEndpoint(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseEndpoint(s)
		if err != nil {
			return
		}
		if e.Port == 0 {
			t.Fatalf("ParseEndpoint(%q) accepted port 0", s)
		}
		if e.Addr.Zone() != "" {
			t.Fatalf("ParseEndpoint(%q) accepted a zone", s)
		}
		// What is accepted prints back to something that parses to the same endpoint.
		back, err := ParseEndpoint(e.String())
		if err != nil || back != e {
			t.Fatalf("ParseEndpoint(%q) = %v; its String %q parses to %v, %v", s, e, e.String(), back, err)
		}
	})
}
