package drainwatch

import (
	"os"
	"path/filepath"
	"slices"

	"github.com/drainit/drainit/internal/config"
)

// udpServers lists the UDP sockets among inodes (the app's) that serve, from the UDP tables of
// drainit's network namespace, which is the app's: see serving. The ports the kernel would have
// picked itself are read from the same namespace's sysctls.
func udpServers(proc string, inodes map[uint64]int) ([]Listener, error) {
	eph := ephemeralPorts(proc)
	var out []Listener
	var buf []byte
	err := readProcNet(proc, "udp", &buf, nil, func(s *Socket) {
		pid := inodes[s.Inode]
		if pid == 0 || !serving(s, eph) {
			return
		}
		e := config.Endpoint{Addr: s.Local.Addr().Unmap(), Port: s.Local.Port()}
		if !slices.ContainsFunc(out, func(l Listener) bool { return l.Endpoint == e }) {
			out = append(out, Listener{Proto: "udp", Endpoint: e, PID: pid, Why: whyUDP})
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ephemeralPorts reads the network namespace's ip_local_port_range and ip_local_reserved_ports,
// or takes the kernel's defaults (32768-60999, none reserved) for what cannot be read.
func ephemeralPorts(proc string) portRange {
	r := portRange{lo: 32768, hi: 60999}
	dir := filepath.Join(proc, "sys/net/ipv4")
	if b, err := os.ReadFile(filepath.Join(dir, "ip_local_port_range")); err == nil {
		if lo, hi, ok := parsePortRange(b); ok {
			r.lo, r.hi = lo, hi
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "ip_local_reserved_ports")); err == nil {
		if res, ok := parsePortList(b); ok {
			r.reserved = res
		}
	}
	return r
}
