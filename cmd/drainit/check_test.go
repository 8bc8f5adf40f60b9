package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drainit/drainit/integration/testenv"
)

// buildBoth builds drainit and, unless skipCheck, drainit-check into dir.
func buildBoth(t *testing.T, dir string, skipCheck bool) (drainit string) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command builds the binaries under test: %v", err)
	}
	pkgs := map[string]string{"drainit": "."}
	if !skipCheck {
		pkgs["drainit-check"] = "../../check/cmd/drainit-check"
	}
	for name, pkg := range pkgs {
		cmd := exec.Command(goTool, "build", "-o", filepath.Join(dir, name), pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	return filepath.Join(dir, "drainit")
}

// runWith runs bin with args, PATH set to path and stdin as its input, and returns its exit
// status and output.
func runWith(t *testing.T, path, stdin, bin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "PATH="+path)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("%s %q: %v", bin, args, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// `drainit check` is drainit-check, found beside drainit: the same output, the same exit status,
// standard input passed on.
func TestCheckRunsDrainitCheck(t *testing.T) {
	testenv.SkipShort(t, "builds drainit and drainit-check")
	dir := t.TempDir()
	drainit := buildBoth(t, dir, false)
	const manifest = `apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  terminationGracePeriodSeconds: 5
  containers:
    - name: web
      image: web:1
      lifecycle:
        preStop:
          exec:
            command: ["sleep", "10"]
`
	for _, tc := range []struct {
		stdin string
		args  []string
		code  int
	}{
		{manifest, []string{"check", "-"}, 1},
		{"kind: [", []string{"check", "-"}, 2},
		{"", []string{"check", "--format", "nope"}, 2},
		{manifest, []string{"check", "--severity-threshold", "info", "--format", "json", "-"}, 1},
	} {
		code, out, errOut := runWith(t, "/nonexistent", tc.stdin, drainit, tc.args...)
		wantCode, wantOut, wantErr := runWith(t, "/nonexistent", tc.stdin, filepath.Join(dir, "drainit-check"), tc.args[1:]...)
		if code != tc.code || wantCode != tc.code || out != wantOut || errOut != wantErr {
			t.Errorf("drainit %q: exit %d, stdout %q, stderr %q;\ndrainit-check: exit %d, stdout %q, stderr %q; want exit %d from both, the same output",
				tc.args, code, out, errOut, wantCode, wantOut, wantErr, tc.code)
		}
	}
}

// Without drainit-check beside it or in PATH, `drainit check` says so in one line, names what
// to install, and exits 2.
func TestCheckWithoutDrainitCheck(t *testing.T) {
	testenv.SkipShort(t, "builds drainit")
	dir := t.TempDir()
	drainit := buildBoth(t, dir, true)
	code, out, msg := runWith(t, t.TempDir(), "kind: Pod\n", drainit, "check", "-")
	if code != 2 || out != "" || strings.Count(msg, "\n") != 1 ||
		!strings.HasPrefix(msg, "drainit check: drainit-check is in neither "+dir+" nor PATH") ||
		!strings.Contains(msg, "go install ./check/cmd/drainit-check") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2, nothing, and one line naming drainit-check, %s and how to install it",
			code, out, msg, dir)
	}
	// Found in PATH instead.
	t.Run("in PATH", func(t *testing.T) {
		other := t.TempDir()
		buildBoth(t, other, false)
		if code, _, errOut := runWith(t, other, "kind: [", drainit, "check", "-"); code != 2 || strings.Contains(errOut, "neither") {
			t.Errorf("drainit-check in PATH, malformed input: exit %d, stderr %q; want drainit-check's exit 2 and its message", code, errOut)
		}
	})
}

// drainit links none of the manifest check: not its module (check/), not a YAML parser, not package
// regexp (whose Unicode tables unicode's initialisation then builds). Go initialises every
// package a binary links before main, on every container start (bench/STARTUP.md).
func TestStartPathLinksNoCheck(t *testing.T) {
	for _, pkg := range testenv.LinuxDeps(t) {
		switch {
		case strings.HasPrefix(pkg, "github.com/drainit/drainit/check"),
			strings.Contains(pkg, "yaml"),
			pkg == "regexp", pkg == "regexp/syntax":
			t.Errorf("drainit links %s: it belongs in drainit-check", pkg)
		}
	}
}
