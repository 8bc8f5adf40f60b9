//go:build linux && (amd64 || arm64 || arm || ppc64le || s390x || riscv64) && !noentrypoint

package entry

import "testing"

// The entry point catches the signals of catchOrder first and skips those of catching in its
// read of every other disposition: the two must name the same signals, or one would be read
// after catch was put on it (and taken for inherited) or not be caught at all.
func TestCatchTablesAgree(t *testing.T) {
	var inOrder [65]uint8
	for _, n := range catchOrder {
		if n != 0 {
			inOrder[n] = 1
		}
	}
	if catchOrder[len(catchOrder)-1] != 0 || inOrder != catching {
		t.Errorf("catchOrder %v (ending in 0) and catching %v name different signals", catchOrder, catching)
	}
	for n, s := range refusal {
		if s != "" && catching[n] == 0 {
			t.Errorf("a refusal for signal %d, which the entry point does not catch", n)
		}
	}
}
