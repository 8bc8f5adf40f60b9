package supervisor

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/internal/config"
)

// TestSpawnFailureSaysWhy: an app that cannot be started gets a shell's status and a reason that
// names the real cause, not "no such file" for a file that is there.
func TestSpawnFailureSaysWhy(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "script")
	if err := os.WriteFile(script, []byte("#!"+filepath.Join(dir, "no-such-interpreter")+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path string
		code       int
		says       string
	}{
		{"missing interpreter", script, 127, "the interpreter its #! line names, " + filepath.Join(dir, "no-such-interpreter") + ", does not exist"},
		{"directory", dir, 126, "is a directory"},
		{"missing file", filepath.Join(dir, "no-such-app"), 127, "no such file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := spawn([]string{c.path}, false)
			var se *StartError
			if !errors.As(err, &se) {
				t.Fatalf("spawn(%q): %v, want a *StartError", c.path, err)
			}
			if se.Code != c.code || !strings.Contains(err.Error(), c.says) {
				t.Errorf("spawn(%q): status %d, %q; want %d and a reason saying %q", c.path, se.Code, err, c.code, c.says)
			}
		})
	}
}

// An app whose arguments and environment fit the kernel's limit (ARG_MAX) only without the
// marker naming drainit still starts: drainit gives up the marker rather than the app. The test
// finds, with real execs of true, an environment that fits by a few bytes less than the
// marker takes.
func TestSpawnDropsMarkerPastArgMax(t *testing.T) {
	trueBin, err := exec.LookPath("true")
	if err != nil {
		t.Fatal(err)
	}
	marker := config.SupervisorEnv + "=" + strings.Repeat("9", 40) // longer than a real one
	fits := func(env []string) bool {
		t.Helper()
		pid, err := syscall.ForkExec(trueBin, []string{trueBin}, &syscall.ProcAttr{Env: env})
		if errors.Is(err, unix.E2BIG) {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		var ws unix.WaitStatus
		_, _ = unix.Wait4(pid, &ws, 0, nil)
		return true
	}
	// Chunks under the kernel's limit for one string (128 KiB) until they no longer fit, then
	// the last one's length, by bisection, at the most that fits.
	const chunk = 100 << 10
	base := slices.DeleteFunc(os.Environ(), isMarker)
	var fillers []string
	for i := 0; fits(append(slices.Clone(base), fillers...)); i++ {
		if i > 1000 {
			t.Fatal("no environment too large for exec: no limit to test")
		}
		fillers = append(fillers, fmt.Sprintf("FILLER%03d=%s", i, strings.Repeat("f", chunk)))
	}
	last := len(fillers) - 1
	name := fmt.Sprintf("FILLER%03d=", last)
	with := func(n int) []string {
		return append(append(slices.Clone(base), fillers[:last]...), name+strings.Repeat("f", n))
	}
	lo, hi := 0, chunk // with(lo) fits, with(hi) does not
	if !fits(with(lo)) {
		t.Fatal("the environment does not fit without its last filler")
	}
	for hi-lo > 1 {
		if mid := (lo + hi) / 2; fits(with(mid)) {
			lo = mid
		} else {
			hi = mid
		}
	}
	env := with(lo)
	if fits(append(slices.Clone(env), marker)) {
		t.Fatalf("the environment fits with the marker too: no window to test")
	}
	for _, kv := range append(env, marker) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	pid, err := spawn([]string{trueBin}, false)
	if err != nil {
		t.Fatalf("spawn with an environment that fits only without the marker: %v", err)
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil || ws.ExitStatus() != 0 {
		t.Errorf("the app: %v, %v; want exit 0", ws, err)
	}
}
