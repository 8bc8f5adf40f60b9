package signals

import "testing"

// On every GOOS, names and numbers are Linux's: drainit check reads manifests of Linux
// containers.
func TestLinuxNamesOffLinux(t *testing.T) {
	for in, want := range map[string]int{"USR1": 10, "STKFLT": 16, "PWR": 30, "POLL": 29, "RTMIN+1": 35} {
		if got, err := Parse(in); err != nil || int(got) != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, int(got), err, want)
		}
	}
	if got := Name(10); got != "SIGUSR1" {
		t.Errorf("Name(10) = %q, want SIGUSR1", got)
	}
}
