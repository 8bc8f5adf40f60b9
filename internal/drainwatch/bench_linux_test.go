package drainwatch

import (
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/procfs"

	"github.com/drainit/drainit/integration/testenv"
)

// BenchmarkPollLive is one poll of each method on this machine's own TCP table, watching a
// listener of the benchmark's, kernel included: cpu-ns/op is the thread's CPU time per poll
// (what the 2% budget is about), ns/op the wall time. DRAINWATCH_BENCH_CONNS=N first opens N
// loopback connections to the listener (2N sockets); run it in a network namespace of its own
// to measure a table of known size:
//
//	unshare -n sh -c 'ip link set lo up; DRAINWATCH_BENCH_CONNS=5000 go test -run ^$ -bench PollLive ./internal/drainwatch/'
func BenchmarkPollLive(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	n, _ := strconv.Atoi(os.Getenv("DRAINWATCH_BENCH_CONNS"))
	accepted := make(chan net.Conn, n)
	defer func() {
		for range n { // every dialled connection is accepted, sooner or later
			(<-accepted).Close()
		}
		ln.Close()
	}()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	var clients []net.Conn
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for range n {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		clients = append(clients, c)
	}
	if tcp, err := os.ReadFile("/proc/net/tcp"); err == nil {
		lines := 0
		for _, c := range tcp {
			if c == '\n' {
				lines++
			}
		}
		b.Logf("%d sockets in /proc/net/tcp", lines-1)
	}
	cfg := Config{AppPID: os.Getpid()}.withDefaults()
	for _, m := range []Method{MethodSockDiag, MethodProcNet} {
		b.Run(string(m), func(b *testing.B) {
			s, _, err := openSystem(cfg, systemOptions{proc: procRoot, self: os.Getpid(), force: m})
			if err != nil {
				testenv.SkipUnlessCI(b, "method "+string(m)+": "+err.Error())
			}
			defer s.close()
			pollBench(b, func() error { _, err := s.sample(); return err })
		})
	}
	b.Run(string(MethodPassiveOpens), func(b *testing.B) {
		r := systemCounter()
		pollBench(b, func() error { _, err := r(); return err })
	})
	// What the passive-opens method cost before it read the counter itself (prometheus/procfs
	// parses the whole file into a struct).
	b.Run(string(MethodPassiveOpens)+"-procfs", func(b *testing.B) {
		fs, err := procfs.NewFS(procRoot)
		if err != nil {
			b.Fatal(err)
		}
		p, err := fs.Self()
		if err != nil {
			b.Fatal(err)
		}
		pollBench(b, func() error { _, err := p.Snmp(); return err })
	})
}

func pollBench(b *testing.B, poll func() error) {
	var cpu time.Duration
	b.ReportAllocs()
	for b.Loop() {
		var err error
		cpu += threadCPU(func() { err = poll() })
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
}
