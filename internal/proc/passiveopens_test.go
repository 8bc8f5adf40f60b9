package proc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The reader of the PassiveOpens counter reads it from the text, a file bigger than its first
// buffer included, again with the same buffer, and this machine's.
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
	r := &PassiveOpensReader{path: path}
	for range 2 { // the buffer is reused
		if v, err := r.Read(); err != nil || v != 4242 {
			t.Fatalf("read = %d, %v; want 4242", v, err)
		}
	}
	if _, err := (&PassiveOpensReader{path: filepath.Join(t.TempDir(), "none")}).Read(); err == nil || !os.IsNotExist(err) {
		t.Errorf("a missing file: %v, want not-exist", err)
	}
	// This machine's counter, twice: it only grows.
	first, err := NewPassiveOpensReader("/proc", os.Getpid()).Read()
	if err != nil {
		t.Fatal(err)
	}
	got, err := NewPassiveOpensReader("/proc", os.Getpid()).Read()
	if err != nil || got < first {
		t.Errorf("read %d, %v; %d just before", got, err, first)
	}
}

func BenchmarkPassiveOpensReader(b *testing.B) {
	r := NewPassiveOpensReader("/proc", os.Getpid())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Read(); err != nil {
			b.Fatal(err)
		}
	}
}
