package signals

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestExitCode(t *testing.T) {
	// Wait statuses as the kernel encodes them: exit code in bits 8-15, signal in bits 0-6.
	cases := []struct {
		ws   unix.WaitStatus
		want int
	}{
		{0, 0}, {1 << 8, 1}, {2 << 8, 2}, {127 << 8, 127}, {255 << 8, 255},
		{unix.WaitStatus(unix.SIGTERM), 143}, {unix.WaitStatus(unix.SIGKILL), 137},
		{unix.WaitStatus(unix.SIGHUP), 129}, {unix.WaitStatus(unix.SIGQUIT) | 0x80, 131}, // core dumped
	}
	for _, c := range cases {
		if got := ExitCode(c.ws); got != c.want {
			t.Errorf("ExitCode(%#x) = %d, want %d", uint32(c.ws), got, c.want)
		}
	}
}
