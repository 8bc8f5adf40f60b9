package integration

import (
	"strconv"
	"strings"
	"testing"

	"github.com/drainit/drainit/internal/testenv"
)

// TestTinyFileLimit: with RLIMIT_NOFILE a few descriptors above what the Go runtime itself holds
// (stdin, stdout, stderr and two of its own on a cgroup v1 host), drainit either runs the app and
// exits with its status, or cannot fork it (exec's error pipe needs two descriptors) and exits
// 126 with one line that says so: never does the Go runtime abort it. The poller's epoll and
// eventfd, which the runtime opens with the first timer or pollable file and aborts without,
// must find room: before, the exit's wait for the log's last lines set a timer, and at limits of
// 5 and 6 drainit died with "fatal error: runtime: netpollinit failed" instead of the line.
func TestTinyFileLimit(t *testing.T) {
	prlimit, err := testenv.LookPath("prlimit")
	if err != nil {
		testenv.SkipUnlessCI(t, err.Error())
	}
	eachMode(t, func(t *testing.T, m mode) {
		t.Parallel()
		for n := 5; n <= 10; n++ {
			d := start(t, spec{mode: m, launcher: []string{prlimit, "--nofile=" + strconv.Itoa(n) + ":" + strconv.Itoa(n), "--"},
				args: []string{"--log-format", "json"}, app: app("exit", "3")})
			st := d.wait(waitTimeout)
			if strings.Contains(d.stderr.String(), "fatal error") {
				t.Fatalf("RLIMIT_NOFILE %d: the Go runtime aborted drainit\n%s", n, d.dump())
			}
			switch st {
			case exitStatus{code: 3}:
			case exitStatus{code: 126}:
				e := d.logs()
				if len(e) != 1 || e[0].msg() != "app not started" || !strings.Contains(e[0].str("error"), "too many open files") {
					t.Errorf("RLIMIT_NOFILE %d: exit 126 with %v, want one line saying too many files are open\n%s", n, e, d.dump())
				}
			default:
				t.Errorf("RLIMIT_NOFILE %d: drainit %v, want the app's exit 3 or 126\n%s", n, st, d.dump())
			}
		}
	})
}
