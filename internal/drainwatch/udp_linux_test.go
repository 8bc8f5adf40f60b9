package drainwatch

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/drainit/drainit/integration/testenv"

	"github.com/drainit/drainit/internal/config"
)

// fakeProc is a /proc with what openSystem reads for an app of pid 10 without children: its
// file descriptors, one per socket inode held; the TCP table of testdata/tables/new/0.tcp (a
// listener on 0.0.0.0:8080, inode 1000); the UDP tables of testdata/udp; and the port sysctls.
// testdata/udp/udp and udp6, by inode:
//
//	5001 0.0.0.0:53            unconnected            serves
//	5002 127.0.0.1:8125        unconnected, loopback  no
//	5003 0.0.0.0:45000         unconnected, ephemeral no (a QUIC client's, say)
//	5004 10.0.0.5:51000        connected to :53       no (a resolver's query)
//	5005 10.0.0.5:514          unconnected            serves
//	6001 0.0.0.0:123           unconnected            serves, but is not the app's
//	5006 0.0.0.0:40000         unconnected, reserved  serves (with 40000 reserved)
//	5101 [::]:443              unconnected            serves
//	5102 [::1]:5353            loopback               no
//	5103 [::ffff:127.0.0.1]:8126 loopback             no
//
// testdata/unix/unix: 7001 listens on /run/app.sock, 7002 is a connection to it, 7003 listens
// on the abstract "@ctl socket" (seqpacket), 7004 is /dev/log (datagram), 7005 an unnamed
// listener, 6002 /run/sidecar.sock (not the app's in these tests).
func fakeProc(t *testing.T, held []uint64, portRange, reserved string) string {
	t.Helper()
	littleEndian(t)
	root := t.TempDir()
	write := func(name string, data []byte) {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	write("net/tcp", read("testdata/tables/new/0.tcp"))
	write("net/udp", read("testdata/udp/udp"))
	write("net/udp6", read("testdata/udp/udp6"))
	write("net/unix", read("testdata/unix/unix"))
	write("10/task/10/children", nil)
	write("10/status", []byte("Name:\tapp\nUid:\t1000\t1000\t1000\t1000\n")) // the tables' sockets' owner
	if portRange != "" {
		write("sys/net/ipv4/ip_local_port_range", []byte(portRange))
	}
	write("sys/net/ipv4/ip_local_reserved_ports", []byte(reserved))
	if err := os.MkdirAll(filepath.Join(root, "10/fd"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i, in := range held {
		if err := os.Symlink("socket:["+strconv.FormatUint(in, 10)+"]", filepath.Join(root, "10/fd", strconv.Itoa(i+3))); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func openFake(root string, cfg Config) (sampler, error) {
	s, _, err := openFakeSetup(root, cfg)
	return s, err
}

func openFakeSetup(root string, cfg Config) (sampler, Setup, error) {
	if cfg.AppPID == 0 {
		cfg.AppPID = 10
	}
	return openSystem(cfg, systemOptions{proc: root, self: 1, force: MethodProcNet})
}

// endpointsOf is the listeners' endpoints, in order.
func endpointsOf(ls []Listener) []config.Endpoint {
	var out []config.Endpoint
	for _, l := range ls {
		out = append(out, l.Endpoint)
	}
	return out
}

func endpoints(ss ...string) []config.Endpoint {
	var out []config.Endpoint
	for _, s := range ss {
		e, err := config.ParseEndpoint(s)
		if err != nil {
			panic(err)
		}
		out = append(out, e)
	}
	return out
}

// An app that holds a UDP socket clients send to is not watched: the error names each such
// socket, and only those.
func TestUDPServersUnwatchable(t *testing.T) {
	all := []uint64{1000, 5001, 5002, 5003, 5004, 5005, 5006, 5101, 5102, 5103}
	const std = "32768\t60999\n"
	for _, tc := range []struct {
		name                string
		held                []uint64
		portRange, reserved string
		want                []config.Endpoint // nil: watched
	}{
		{"every kind", all, std, "40000,50000-50010\n", endpoints("0.0.0.0:53", "10.0.0.5:514", "0.0.0.0:40000", "[::]:443")},
		{"clients only", []uint64{1000, 5002, 5003, 5004, 5102, 5103}, std, "\n", nil},
		{"another process's server", []uint64{1000, 5003}, std, "\n", nil},
		// 40000 is in the range and not reserved: the kernel could have picked it.
		{"nothing reserved", []uint64{1000, 5006}, std, "\n", nil},
		{"reserved in a range", []uint64{1000, 5006}, std, "39990-40010", endpoints("0.0.0.0:40000")},
		// Without the sysctl, the kernel's default range, which holds 40000.
		{"no port range", []uint64{1000, 5006}, "", "", nil},
		// A narrower range leaves 45000 outside: the app chose it.
		{"narrow range", []uint64{1000, 5003}, "50000 60000", "", endpoints("0.0.0.0:45000")},
		{"unreadable range", []uint64{1000, 5003}, "60000 50000", "", nil},
		// UDP alone: the UDP is why, not the missing TCP listener.
		{"udp only", []uint64{5101}, std, "", endpoints("[::]:443")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := openFake(fakeProc(t, tc.held, tc.portRange, tc.reserved), Config{})
			if tc.want == nil {
				if err != nil {
					t.Fatalf("open: %v, want the TCP listener watched", err)
				}
				s.close()
				return
			}
			u, ok := errors.AsType[*UnwatchableError](err)
			if !ok {
				t.Fatalf("open: %v, want an UnwatchableError", err)
			}
			if got := endpointsOf(u.Listeners); !slices.Equal(got, tc.want) {
				t.Errorf("UDP endpoints %v, want %v", got, tc.want)
			}
			for _, l := range u.Listeners {
				if l.Proto != "udp" || l.PID != 10 || l.Why != whyUDP {
					t.Errorf("listener %+v, want udp, held by pid 10, with why", l)
				}
			}
			for _, e := range tc.want {
				if !strings.Contains(err.Error(), e.String()) {
					t.Errorf("error %q does not name %s", err, e)
				}
			}
		})
	}
}

// --drain-ports names the listeners to watch, and the app's sockets are not looked at: the way
// out for an app whose UDP is not traffic the pod's endpoints carry (a cluster's gossip).
func TestUDPServersPortsGiven(t *testing.T) {
	root := fakeProc(t, []uint64{1000, 5001}, "32768 60999", "")
	s, err := openFake(root, Config{Ports: []config.Endpoint{{Port: 8080}}})
	if err != nil {
		t.Fatalf("with --drain-ports: %v, want the listener watched", err)
	}
	s.close()
}

// What cannot be read is not taken for no UDP: the drain is fixed.
func TestUDPServersTables(t *testing.T) {
	root := fakeProc(t, []uint64{1000, 5101}, "32768 60999", "")
	if err := os.Remove(filepath.Join(root, "net/udp6")); err != nil {
		t.Fatal(err)
	}
	s, err := openFake(root, Config{})
	if err != nil {
		t.Fatalf("without IPv6 (no udp6): %v, want the listener watched", err)
	}
	s.close()
	if err := os.Remove(filepath.Join(root, "net/udp")); err != nil {
		t.Fatal(err)
	}
	if _, err := openFake(root, Config{}); err == nil || !strings.Contains(err.Error(), "reading the UDP table") {
		t.Errorf("without /proc/net/udp: %v, want an error", err)
	}
	if err := os.WriteFile(filepath.Join(root, "net/udp"), []byte("garbage\n1 2 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := openFake(root, Config{}); err == nil || !strings.Contains(err.Error(), "net/udp") {
		t.Errorf("a malformed /proc/net/udp: %v, want an error naming it", err)
	}
}

// The watch's Result carries the endpoints, for the log.
func TestWatchUnavailableUDP(t *testing.T) {
	f := newFakeSystem()
	udp := []Listener{{Proto: "udp", Endpoint: endpoints("[::]:53")[0], PID: 1, Why: whyUDP}}
	f.openErr = &UnwatchableError{Listeners: udp}
	r := f.run(t, Config{AppPID: 1})
	if r.Reason != ReasonUnavailable || !slices.Equal(r.Unwatchable, udp) {
		t.Fatalf("result %+v, want unavailable with the UDP listener", r)
	}
	f = newFakeSystem()
	f.openErr = errors.New("no /proc/net/tcp")
	if r := f.run(t, Config{AppPID: 1}); r.Unwatchable != nil {
		t.Errorf("another reason has unwatchable listeners: %+v", r)
	}
}

// On this machine's own tables: a UDP socket of this process's is found, as its kind says.
func TestLiveUDPServers(t *testing.T) {
	eph := ephemeralPorts(procRoot)
	// A free port outside the ephemeral range, on addr.
	listen := func(addr string) net.PacketConn {
		for p := 1024; p < 65536; p += 97 {
			if !eph.has(uint16(p)) {
				if c, err := net.ListenPacket("udp4", addr+":"+strconv.Itoa(p)); err == nil {
					t.Cleanup(func() { c.Close() })
					return c
				}
			}
		}
		testenv.SkipUnlessCI(t, "no free UDP port outside the ephemeral range")
		return nil
	}
	srv := listen("0.0.0.0")                             // a server
	loop := listen("127.0.0.1")                          // a server for this host alone
	client, err := net.ListenPacket("udp4", "0.0.0.0:0") // the kernel picks: a client
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	inodes, _, err := socketInodes(procRoot, []int{os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := udpServers(procRoot, inodes)
	if err != nil {
		t.Fatal(err)
	}
	got := endpointsOf(ls)
	want := []config.Endpoint{{Addr: netip.IPv4Unspecified(), Port: uint16(srv.LocalAddr().(*net.UDPAddr).Port)}}
	if !slices.Equal(got, want) {
		t.Errorf("serving UDP sockets %v, want %v (client on %v, loopback on %v)", got, want, client.LocalAddr(), loop.LocalAddr())
	}
}
