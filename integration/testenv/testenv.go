// Package testenv holds what the tests, the harnesses and the benchmark share about the machine
// they run on: whether a test that needs something absent skips or fails, where Debian puts the
// programs, and what they read of the machine from /proc (machine.go).
package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
)

// ModuleRoot is the repository's root, found from this file's location.
func ModuleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// CI reports whether the tests run under CI=true, where nothing may be skipped.
func CI() bool { return os.Getenv("CI") == "true" }

// SkipUnlessCI ends a test that cannot run here, for the reason given: a skip, or under CI=true
// a failure, so that a CI run never passes with nothing tested.
func SkipUnlessCI(t testing.TB, reason string) {
	t.Helper()
	if CI() {
		t.Fatalf("%s (CI=true: this test must run)", reason)
	}
	t.Skip(reason)
}

// SkipShort skips a test that is slow or builds binaries when the tests run with -short, saying
// what it would have done. CI=true runs everything (make test passes no -short): there -short
// is a failure.
func SkipShort(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		SkipUnlessCI(t, "-short: "+what)
	}
}

// SkipElsewhere skips a test that cannot run on this platform at all (another operating system,
// another byte order), for the reason given, also under CI=true: CI runs on linux/amd64, where
// every such test runs. Nothing that a machine of the platform may or may not have goes here:
// that is SkipUnlessCI.
func SkipElsewhere(t testing.TB, reason string) {
	t.Helper()
	t.Skip("not on this platform: " + reason)
}

// SkipUnlessAsked skips a test that is a tool run on request, not a check (it writes a seed
// corpus, it simulates for minutes), unless the variable env is set; also under CI=true, which
// does not ask. what says what it does when asked.
func SkipUnlessAsked(t testing.TB, env, what string) {
	t.Helper()
	if os.Getenv(env) == "" {
		t.Skip(env + "=1 " + what)
	}
}

// LookPath finds a program in PATH or in the sbin directories, where Debian puts runc and
// which a non-login PATH may lack.
func LookPath(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/bin", "/usr/local/bin"} {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not in PATH nor in /usr/sbin", name)
}

// LinuxDeps lists the import paths a static Linux build of the package in the test's directory
// links (go list -deps), for the tests that keep a binary's dependencies in bounds.
func LinuxDeps(t testing.TB) []string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command lists the packages: %v", err)
	}
	cmd := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", ".")
	cmd.Env = append(os.Environ(), "GOOS=linux", "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	return strings.Fields(string(out))
}

// FreeLoopbackAddr is a loopback address (127.0.0.1:PORT) with a port nobody listens on now,
// for a listener the test gives drainit or a server it starts.
func FreeLoopbackAddr(t testing.TB) string {
	t.Helper()
	return FreeLoopbackAddrs(t, 1)[0]
}

// FreeLoopbackAddrs is n addresses FreeLoopbackAddr would give, all different: each is held
// until all are found, where two calls in a row can get one port twice.
func FreeLoopbackAddrs(t testing.TB, n int) []string {
	t.Helper()
	var out []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		out = append(out, ln.Addr().String())
	}
	return out
}

// SwitchProbe is a ready probe (hooks.Probe) for the tests: it passes while Ok holds, refuses
// otherwise, and counts its checks.
type SwitchProbe struct {
	Ok     atomic.Bool
	Checks atomic.Int64
}

// String names the probe in the log.
func (p *SwitchProbe) String() string { return "test://switch" }

// Check passes while Ok holds.
func (p *SwitchProbe) Check(context.Context) error {
	p.Checks.Add(1)
	if p.Ok.Load() {
		return nil
	}
	return errors.New("refused")
}

// WriteTree writes files (slash-separated names: content) below a new temporary directory, with
// the directories they need, and returns it: a fake /proc or /sys, a tree of manifests.
func WriteTree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
