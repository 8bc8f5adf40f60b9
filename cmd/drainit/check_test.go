package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The seed case of the issue: grace 60, preStop 55, app shutdown 10 → needs 65.
const seed65 = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: orders
spec:
  template:
    spec:
      terminationGracePeriodSeconds: 60
      containers:
        - name: web
          image: orders:1
          env:
            - name: SPRING_LIFECYCLE_TIMEOUT_PER_SHUTDOWN_PHASE
              value: 10s
          lifecycle:
            preStop:
              sleep:
                seconds: 55
`

// Fits: grace 45, preStop 10, Spring's 30s.
const seedOK = `apiVersion: v1
kind: Pod
metadata:
  name: ok
spec:
  terminationGracePeriodSeconds: 45
  containers:
    - name: web
      image: web:1
      env:
        - name: SERVER_SHUTDOWN
          value: graceful
      lifecycle:
        preStop:
          exec:
            command: ["sh", "-c", "sleep 10"]
`

// Only an info: no preStop, no drainit.
const noDrain = `apiVersion: v1
kind: Pod
metadata:
  name: plain
spec:
  containers:
    - name: web
      image: web:1
`

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func runCheck(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = checkCmd(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestCheckCmdExitStatus(t *testing.T) {
	bad := writeFile(t, "deploy.yaml", seed65)
	ok := writeFile(t, "ok.yaml", seedOK)
	info := writeFile(t, "plain.yaml", noDrain)

	code, out, errOut := runCheck(t, "", bad)
	if code != 1 {
		t.Errorf("error finding: exit %d, want 1", code)
	}
	want := bad + `:17: error: container "web": grace 60s, preStop 55s (sleep action)`
	if !strings.HasPrefix(out, want) || !strings.Contains(out, "needs 65s") || strings.Count(out, "\n") != 1 {
		t.Errorf("stdout:\n%s\nwant one line starting %q and saying 65s is needed", out, want)
	}
	if !strings.Contains(errOut, "1 error") {
		t.Errorf("stderr summary: %q", errOut)
	}

	if code, out, _ := runCheck(t, "", ok); code != 0 || out != "" {
		t.Errorf("fitting manifest: exit %d, stdout %q; want 0 and nothing", code, out)
	}
	if code, out, _ := runCheck(t, "", info); code != 0 || !strings.Contains(out, "info: container \"web\"") {
		t.Errorf("info only: exit %d, stdout %q; want 0 and the info", code, out)
	}
	// Any error among several files: 1. Findings come in the order of the files.
	code, out, _ = runCheck(t, "", ok, info, bad)
	if code != 1 || strings.Index(out, info) > strings.Index(out, bad) {
		t.Errorf("several files: exit %d, stdout:\n%s", code, out)
	}
}

func TestCheckCmdStdin(t *testing.T) {
	for _, args := range [][]string{{"-"}, nil} {
		code, out, _ := runCheck(t, seed65, args...)
		if code != 1 || !strings.HasPrefix(out, "<stdin>:17: error:") {
			t.Errorf("args %q: exit %d, stdout %q", args, code, out)
		}
	}
}

func TestCheckCmdJSON(t *testing.T) {
	f := writeFile(t, "deploy.yaml", seed65+"---\n"+noDrain)
	// The option may follow the file.
	code, out, errOut := runCheck(t, "", f, "--format", "json")
	if code != 1 {
		t.Errorf("exit %d, want 1 (stderr %q)", code, errOut)
	}
	var r struct {
		Findings []struct {
			File, Severity, Rule, Container, Message string
			Line                                     int
		}
		Errors, Warnings, Infos, Workloads, Containers int
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	if r.Errors != 1 || r.Infos != 1 || r.Workloads != 2 || r.Containers != 2 || len(r.Findings) != 2 {
		t.Fatalf("report: %+v", r)
	}
	if g := r.Findings[0]; g.File != f || g.Line != 17 || g.Severity != "error" || g.Rule != "shutdown-exceeds-grace" || g.Container != "web" {
		t.Errorf("first finding: %+v", g)
	}
}

// TestCheckCmdBadInput: unreadable or malformed input is exit 2 and one line on stderr that
// names the file and says what is wrong; nothing on stdout.
func TestCheckCmdBadInput(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.yaml")
	broken := writeFile(t, "broken.yaml", "kind: Pod\nspec:\n  containers: [\n")
	shape := writeFile(t, "shape.yaml", "kind: Pod\nspec:\n  terminationGracePeriodSeconds: soon\n  containers: []\n")
	ok := writeFile(t, "ok.yaml", seedOK)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{ok, missing}, missing + ": cannot read: no such file or directory"},
		{[]string{dir}, dir + ": cannot read: is a directory"},
		{[]string{broken}, broken + ":3: not valid YAML"},
		{[]string{shape}, shape + `:3: spec.terminationGracePeriodSeconds: want a whole number, got the string "soon"`},
		{[]string{"--format", "xml", ok}, `--format "xml": must be text or json`},
		{[]string{"--bogus", ok}, "flag provided but not defined: -bogus"},
	}
	for _, c := range cases {
		code, out, errOut := runCheck(t, "", c.args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("args %q: exit %d, stdout %q, stderr %q; want 2, nothing, one line with %q", c.args, code, out, errOut, c.want)
		}
	}
}

func TestCheckCmdHelpAndNothingFound(t *testing.T) {
	if code, out, _ := runCheck(t, "", "--help"); code != 0 || !strings.Contains(out, "Usage: drainit check") {
		t.Errorf("--help: exit %d, stdout %q", code, out)
	}
	svc := writeFile(t, "svc.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: web}\n")
	code, out, errOut := runCheck(t, "", svc)
	if code != 0 || out != "" || !strings.Contains(errOut, "no pod templates found") {
		t.Errorf("no pod templates: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// "--" ends the options: a file may then start with a dash.
	dash := writeFile(t, "-dash.yaml", noDrain)
	t.Chdir(filepath.Dir(dash))
	if code, out, _ := runCheck(t, "", "--", "-dash.yaml"); code != 0 || !strings.HasPrefix(out, "-dash.yaml:7: info:") {
		t.Errorf("after --: exit %d, stdout %q", code, out)
	}
}
