package drainwatch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drainit/drainit/internal/proc"
)

// The poll's own reader of the PassiveOpens counter reads what internal/proc's does, from the
// same text, without allocating per poll.
func TestPassiveOpensReader(t *testing.T) {
	const snmp = `Ip: Forwarding DefaultTTL InReceives
Ip: 1 64 1234
Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab
Tcp: 1 200 120000 -1 17 4242 0 0 3
Udp: InDatagrams NoPorts
Udp: 5 6
`
	if v, err := parsePassiveOpens([]byte(snmp)); err != nil || v != 4242 {
		t.Fatalf("parsePassiveOpens = %d, %v; want 4242", v, err)
	}
	for _, bad := range []string{
		"Ip: Forwarding\nIp: 1\n",
		"Tcp: RtoAlgorithm PassiveOpens\nTcp: 1\n",
		"Tcp: RtoAlgorithm PassiveOpens\nTcp: 1 x\n",
		"Tcp: RtoAlgorithm PassiveOpens\n",
	} {
		if v, err := parsePassiveOpens([]byte(bad)); err == nil {
			t.Errorf("parsePassiveOpens(%q) = %d, want an error", bad, v)
		}
	}
	// A file bigger than the first buffer is read whole.
	path := filepath.Join(t.TempDir(), "snmp")
	big := strings.Repeat("Xx: "+strings.Repeat("y ", 100)+"\n", 100) + snmp
	if err := os.WriteFile(path, []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &passiveOpensReader{path: path}
	for range 2 { // the buffer is reused
		if v, err := r.read(); err != nil || v != 4242 {
			t.Fatalf("read = %d, %v; want 4242", v, err)
		}
	}
	if _, err := (&passiveOpensReader{path: filepath.Join(t.TempDir(), "none")}).read(); err == nil || !os.IsNotExist(err) {
		t.Errorf("a missing file: %v, want not-exist", err)
	}
	// This machine's counter, as internal/proc reads it (it only grows: read proc's first).
	want, err := proc.PassiveOpens("/proc", os.Getpid())
	if err != nil {
		t.Skip(err)
	}
	got, err := (&passiveOpensReader{path: filepath.Join("/proc", "self", "net", "snmp")}).read()
	if err != nil || got < want {
		t.Errorf("read %d, %v; internal/proc read %d just before", got, err, want)
	}
}

func BenchmarkPassiveOpensReader(b *testing.B) {
	r := &passiveOpensReader{path: filepath.Join("/proc", "self", "net", "snmp")}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.read(); err != nil {
			b.Fatal(err)
		}
	}
}
