package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/drainit/drainit/integration/testenv"
	"github.com/drainit/drainit/internal/buildinfo"
)

// The real binary, built both ways: the ldflags stamp is printed exactly; without it, a build in
// this checkout reports the checkout's commit and never the "dev" placeholder.
func TestVersionBinary(t *testing.T) {
	testenv.SkipShort(t, "builds drainit twice")
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command builds the binary under test: %v", err)
	}
	dir := t.TempDir()
	build := func(name string, args ...string) string {
		t.Helper()
		bin := filepath.Join(dir, name)
		cmd := exec.Command(goTool, append(append([]string{"build", "-o", bin}, args...), ".")...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %v: %v\n%s", args, err, out)
		}
		for _, arg := range []string{"version", "--version"} {
			out, err := exec.Command(bin, arg).Output()
			if err != nil {
				t.Fatalf("%s %s: %v", name, arg, err)
			}
			if lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"); len(lines) != 1 {
				t.Fatalf("%s %s prints %d lines, want one:\n%s", name, arg, len(lines), out)
			}
		}
		out, _ := exec.Command(bin, "version").Output()
		return strings.TrimSpace(string(out))
	}
	plat := runtime.GOOS + "/" + runtime.GOARCH

	got := build("stamped", "-ldflags", "-X main.version=v9.8.7 -X main.commit=abc1234 -X main.date=2026-11-23T10:00:00Z")
	if want := "drainit v9.8.7 (commit abc1234, committed 2026-11-23T10:00:00Z, " + runtime.Version() + ", " + plat + ")"; got != want {
		t.Errorf("stamped build prints\n%s\nwant\n%s", got, want)
	}

	// -buildvcs=true: the go command's default (auto) can be turned off in GOFLAGS, and a user's
	// build in a checkout has it on; outside a git checkout there is nothing to record.
	head, gitErr := exec.Command("git", "rev-parse", "HEAD").Output()
	var vcs []string
	if gitErr == nil {
		vcs = []string{"-buildvcs=true"}
	}
	got = build("plain", vcs...)
	v, rest, ok := strings.Cut(strings.TrimPrefix(got, "drainit "), " (")
	if !strings.HasPrefix(got, "drainit ") || !ok || !strings.HasSuffix(rest, runtime.Version()+", "+plat+")") {
		t.Fatalf("unstamped build prints %q: not drainit VERSION (…, GO, OS/ARCH)", got)
	}
	if v == "" || v == buildinfo.Unstamped {
		t.Errorf("unstamped build reports version %q, not the module's", v)
	}
	if gitErr != nil {
		t.Logf("no git checkout to compare the commit with (%v): %s", gitErr, got)
		return
	}
	if want := "commit " + strings.TrimSpace(string(head)); !strings.Contains(rest, want) {
		t.Errorf("unstamped build in this checkout prints %q, without %q", got, want)
	}
	if !strings.Contains(rest, ", committed ") {
		t.Errorf("unstamped build in this checkout prints %q, without the commit's date", got)
	}
}
