package proc

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzParsePassiveOpens: whatever /proc/net/snmp holds (another kernel's layout, a truncated
// read), the parser never panics, and a value it returns is the one the first two "Tcp:"
// lines pair with the PassiveOpens name, as a plain split of the text finds it.
func FuzzParsePassiveOpens(f *testing.F) {
	f.Add([]byte("Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab\nTcp: 1 200 120000 -1 17 4242 0 0 3\n"))
	f.Add([]byte("TcpExt: PassiveOpens\nTcpExt: 9\nTcp: PassiveOpens\nTcp: 7"))
	f.Add([]byte("Tcp:  PassiveOpens  X\nTcp:  18446744073709551615 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parsePassiveOpens(data)
		if err != nil {
			return
		}
		want, ok := referencePassiveOpens(string(data))
		if !ok || got != want {
			t.Fatalf("parsePassiveOpens(%q) = %d; a plain split finds %d (%v)", data, got, want, ok)
		}
	})
}

// referencePassiveOpens is the slow, obvious reading of the same format.
func referencePassiveOpens(s string) (uint64, bool) {
	var tcp [][]string
	for _, line := range strings.Split(s, "\n") {
		if rest, ok := strings.CutPrefix(line, "Tcp:"); ok {
			var fields []string
			for _, f := range strings.Split(rest, " ") {
				if f != "" {
					fields = append(fields, f)
				}
			}
			tcp = append(tcp, fields)
		}
	}
	if len(tcp) < 2 {
		return 0, false
	}
	for i, name := range tcp[0] {
		if i < len(tcp[1]) && name == "PassiveOpens" {
			v, err := strconv.ParseUint(tcp[1][i], 10, 64)
			return v, err == nil
		}
	}
	return 0, false
}
