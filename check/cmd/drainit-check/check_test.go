package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/drainit/drainit/check"
	"github.com/drainit/drainit/integration/testenv"
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
		{[]string{filepath.Join(dir, "*.yaml")}, `pattern "` + filepath.Join(dir, "*.yaml") + `" matches no file`},
		{[]string{broken}, broken + ":3: not valid YAML"},
		{[]string{shape}, shape + `:3: spec.terminationGracePeriodSeconds: want a whole number, got the string "soon"`},
		{[]string{"--format", "xml", ok}, `--format "xml": must be text, json, sarif or junit`},
		{[]string{"--ignore", "bogus", ok}, `--ignore "bogus": unknown rule "bogus" (drainit check --help)`},
		{[]string{"--ignore", "no-drain,  Not-A-Rule", ok}, `--ignore "no-drain,  Not-A-Rule": unknown rule "not-a-rule"`},
		{[]string{"--ignore", " , ", ok}, `--ignore " , ": names no rule`},
		{[]string{"--severity-threshold", "fatal", ok}, `--severity-threshold "fatal": must be error, warning or info`},
		{[]string{"--exclude", "[", dir}, `--exclude "[": syntax error in pattern`},
		{[]string{"--bogus", ok}, "unknown option --bogus"},
		{[]string{"--formta", "json", ok}, "unknown option --formta (--format?)"},
	}
	for _, c := range cases {
		code, out, errOut := runCheck(t, "", c.args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("args %q: exit %d, stdout %q, stderr %q; want 2, nothing, one line with %q", c.args, code, out, errOut, c.want)
		}
	}
}

// TestCheckCmdBadInputReport: a named input that cannot be read still gives a report in the
// json, sarif and junit formats, saying which and why, for a CI step that uploads it (code
// scanning fails on a missing or empty SARIF file, and the reason would be lost).
func TestCheckCmdBadInputReport(t *testing.T) {
	broken := writeFile(t, "broken.yaml", "kind: Pod\nspec:\n  containers: [\n")
	const why = "not valid YAML"
	code, out, _ := runCheck(t, "", "--format", "json", broken)
	var report struct {
		Problems []struct {
			File    string
			Line    int
			Message string
		}
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil || code != 2 || len(report.Problems) != 1 ||
		report.Problems[0].File != broken || report.Problems[0].Line != 3 || !strings.HasPrefix(report.Problems[0].Message, why) {
		t.Errorf("json: exit %d, %v, report %+v; want 2 and the file's problem at line 3\n%s", code, err, report, out)
	}
	code, out, _ = runCheck(t, "", "--format", "sarif", broken)
	var log struct {
		Runs []struct {
			Invocations []struct {
				ExecutionSuccessful        bool
				ToolExecutionNotifications []struct {
					Level   string
					Message struct{ Text string }
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &log); err != nil || code != 2 || len(log.Runs) != 1 || len(log.Runs[0].Invocations) != 1 {
		t.Fatalf("sarif: exit %d, %v\n%s", code, err, out)
	}
	inv := log.Runs[0].Invocations[0]
	if inv.ExecutionSuccessful || len(inv.ToolExecutionNotifications) != 1 || inv.ToolExecutionNotifications[0].Level != "error" ||
		!strings.Contains(inv.ToolExecutionNotifications[0].Message.Text, why) {
		t.Errorf("sarif: invocation %+v, want it unsuccessful with the problem as an error", inv)
	}
	code, out, _ = runCheck(t, "", "--format", "junit", broken)
	var suites struct {
		Errors int `xml:"errors,attr"`
		Suite  []struct {
			Name string `xml:"name,attr"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(out), &suites); err != nil || code != 2 || suites.Errors != 1 || len(suites.Suite) != 1 || suites.Suite[0].Name != broken {
		t.Errorf("junit: exit %d, %v, %+v; want 2 and one error for %s\n%s", code, err, suites, broken, out)
	}
}

// TestCheckCmdNumberForms: a grace period written as kubectl's YAML reading takes it (3e1, 30.0)
// is checked with the value the API server stores; a negative one, which the API server stores
// too, is a grace-negative error; a fraction, which it refuses, is bad input.
func TestCheckCmdNumberForms(t *testing.T) {
	pod := func(grace, sleep string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  terminationGracePeriodSeconds: " + grace +
			"\n  containers:\n  - name: c\n    image: x\n    lifecycle: {preStop: {sleep: {seconds: " + sleep + "}}}\n"
	}
	cases := []struct {
		grace, sleep string
		code         int
		want         string
	}{
		{"3e1", "31.0", 1, `:9: error: container "c": preStop 31s (sleep action) > terminationGracePeriodSeconds 30s`},
		{"0x28", "3e1", 0, ""},
		{"-5", "0", 1, `:5: error: Pod "p": terminationGracePeriodSeconds is -5: the API server accepts it with a warning and deletes the pod with a grace period of 1s instead`},
		{"30.5", "5", 2, `:5: spec.terminationGracePeriodSeconds: want a whole number, got "30.5"`},
		{"30", "1e19", 2, `:9: spec.containers[0].lifecycle.preStop.sleep.seconds: "1e19" is out of range: the API server reads it as a 64-bit integer`},
	}
	for _, c := range cases {
		f := writeFile(t, "pod.yaml", pod(c.grace, c.sleep))
		code, out, errOut := runCheck(t, "", f)
		got := out
		if c.code == 2 {
			got = errOut
		}
		if code != c.code || c.want != "" && !strings.Contains(got, f+c.want) || c.want == "" && out != "" {
			t.Errorf("grace %s, sleep %s: exit %d, stdout %q, stderr %q; want %d and %q", c.grace, c.sleep, code, out, errOut, c.code, c.want)
		}
	}
}

// TestCheckCmdSidecar: a native sidecar whose stop does not fit after the main container's is an
// error (exit 1); a plain init container is not reported, not even as no-drain.
func TestCheckCmdSidecar(t *testing.T) {
	f := writeFile(t, "sidecar.yaml", `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  terminationGracePeriodSeconds: 30
  initContainers:
    - {name: setup, image: x, command: [/setup]}
    - name: proxy
      image: proxy:1
      restartPolicy: Always
      command: [uvicorn, proxy:app, --timeout-graceful-shutdown, "15"]
  containers:
    - name: web
      image: web:1
      lifecycle: {preStop: {sleep: {seconds: 20}}}
`)
	code, out, _ := runCheck(t, "", f)
	want := f + `:11: error: container "proxy": native sidecar (an init container with restartPolicy: Always): the kubelet sends it its stop signal only once the containers before it have stopped, and container "web" may take 20s; it takes that time, in whole seconds rounded down, off grace 30s and leaves the sidecar max(30s - 20s, 2s) = 10s before SIGKILL, and its own stop takes app shutdown 15s`
	if code != 1 || !strings.HasPrefix(out, want) || strings.Count(out, "\n") != 1 {
		t.Errorf("exit %d, stdout %q; want 1 and one line starting %q", code, out, want)
	}
}

func TestCheckCmdHelpAndNothingFound(t *testing.T) {
	if code, out, _ := runCheck(t, "", "--help"); code != 0 || !strings.Contains(out, "Usage: drainit check") {
		t.Errorf("--help: exit %d, stdout %q", code, out)
	}
	svc := writeFile(t, "svc.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: web}\n")
	if code, out, errOut := runCheck(t, "", "--help=false", svc); code != 0 || strings.Contains(out, "Usage") ||
		!strings.Contains(errOut, "no pod templates found") {
		t.Errorf("--help=false: exit %d, stdout %q, stderr %q; want the check run", code, out, errOut)
	}
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

// TestCheckCmdDirectory: a directory is checked recursively; hidden directories and files that
// are not Kubernetes are skipped quietly; a broken manifest found in it is reported on stderr
// and makes the exit status 2 while every other file is still checked and reported; --exclude
// leaves it out.
func TestCheckCmdDirectory(t *testing.T) {
	dir := testenv.WriteTree(t, map[string]string{
		"apps/orders.yaml":         seed65,
		"apps/nested/plain.yml":    noDrain,
		".hidden/zero.yaml":        "kind: Pod\nspec:\n  terminationGracePeriodSeconds: 0\n  containers: [{name: c}]\n",
		"docker-compose.yml":       "services:\n  web:\n    image: web:1\n",
		"ansible/playbook.yaml":    "- hosts: all\n  tasks: []\n",
		"notes.txt":                "kind: Pod\n",
		"apps/nested/package.json": `{"name": "x", "version": "1.0.0"}`,
	})
	t.Chdir(dir)
	code, out, errOut := runCheck(t, "", ".")
	if code != 1 {
		t.Errorf("exit %d, want 1 (stderr %q)", code, errOut)
	}
	wantOut := filepath.FromSlash("apps/nested/plain.yml") + ":7: info:"
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], wantOut) || !strings.HasPrefix(lines[1], filepath.FromSlash("apps/orders.yaml")+":17: error:") {
		t.Errorf("stdout:\n%s\nwant the info of %s, then the error of apps/orders.yaml, nothing from .hidden", out, wantOut)
	}
	if errOut != "drainit check: 2 containers in 2 pod templates (5 files): 1 error, 0 warnings, 1 info\n" {
		t.Errorf("stderr %q", errOut)
	}

	broken := filepath.FromSlash("apps/broken.yaml")
	if err := os.WriteFile(broken, []byte("apiVersion: v1\nkind: Pod\nspec:\n  terminationGracePeriodSeconds: soon\n  containers: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out2, errOut := runCheck(t, "", ".")
	if code != 2 || out2 != out {
		t.Errorf("with a broken manifest: exit %d, stdout\n%s\nwant 2 and the same findings", code, out2)
	}
	wantErr := "drainit check: " + broken + `:4: spec.terminationGracePeriodSeconds: want a whole number, got the string "soon"` + "\n"
	if !strings.HasPrefix(errOut, wantErr) || !strings.HasSuffix(errOut, "; 1 file could not be checked\n") {
		t.Errorf("stderr %q, want it to start with %q and end with the count", errOut, wantErr)
	}
	if code, _, errOut := runCheck(t, "", ".", "--exclude", "**/broken.yaml"); code != 1 {
		t.Errorf("--exclude: exit %d, stderr %q", code, errOut)
	}
	// Named, the broken file stops the check at once, as before.
	if code, out, _ := runCheck(t, "", broken, "."); code != 2 || out != "" {
		t.Errorf("named broken file: exit %d, stdout %q", code, out)
	}
}

// TestCheckCmdPattern: a quoted pattern is expanded by drainit, ** included.
func TestCheckCmdPattern(t *testing.T) {
	dir := testenv.WriteTree(t, map[string]string{"k8s/a/b/orders.yaml": seed65, "k8s/plain.yaml": noDrain, "k8s/a/ok.yml": seedOK})
	t.Chdir(dir)
	code, out, _ := runCheck(t, "", "k8s/**/*.yaml")
	if code != 1 || strings.Count(out, "\n") != 2 || !strings.Contains(out, filepath.FromSlash("k8s/a/b/orders.yaml")+":17: error:") {
		t.Errorf("exit %d, stdout:\n%s", code, out)
	}
}

// TestCheckCmdIgnore: --ignore and the annotation take a finding out of the exit status but
// not out of sight: the summary counts it, the JSON keeps it marked.
func TestCheckCmdIgnore(t *testing.T) {
	f := writeFile(t, "deploy.yaml", seed65)
	code, out, errOut := runCheck(t, "", "--ignore", "Shutdown-Exceeds-Grace", f)
	if code != 0 || out != "" || !strings.HasSuffix(errOut, "0 errors, 0 warnings, 0 infos, 1 ignored\n") {
		t.Errorf("--ignore: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// Repeatable and comma-separated.
	if code, _, _ := runCheck(t, "", "--ignore", "no-drain,grace-zero", "--ignore", "shutdown-exceeds-grace", f); code != 0 {
		t.Errorf("repeated --ignore: exit %d", code)
	}
	annotated := strings.Replace(seed65, "  name: orders\n", "  name: orders\n  annotations:\n    drainit.io/ignore: shutdown-exceeds-grace\n", 1)
	g := writeFile(t, "annotated.yaml", annotated)
	code, out, _ = runCheck(t, "", "--format", "json", g)
	var r struct {
		Findings []struct {
			Rule, IgnoredBy string
			Ignored         bool
		}
		Errors, Ignored int
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if code != 0 || r.Errors != 0 || r.Ignored != 1 || len(r.Findings) != 1 || !r.Findings[0].Ignored || r.Findings[0].IgnoredBy != "annotation" {
		t.Errorf("annotation: exit %d, report %+v", code, r)
	}
}

// TestCheckCmdSeverityThreshold: the threshold decides which severities make the exit status 1.
func TestCheckCmdSeverityThreshold(t *testing.T) {
	info := writeFile(t, "plain.yaml", noDrain)
	for threshold, want := range map[string]int{"": 0, "error": 0, "warning": 0, "info": 1} {
		args := []string{info}
		if threshold != "" {
			args = append(args, "--severity-threshold", threshold)
		}
		if code, _, _ := runCheck(t, "", args...); code != want {
			t.Errorf("threshold %q on an info: exit %d, want %d", threshold, code, want)
		}
	}
	bad := writeFile(t, "deploy.yaml", seed65)
	if code, _, _ := runCheck(t, "", "--severity-threshold", "warning", bad); code != 1 {
		t.Errorf("an error is above every threshold: exit %d", code)
	}
}

// TestCheckCmdFormats: SARIF and JUnit on stdout, the exit status as for text.
func TestCheckCmdFormats(t *testing.T) {
	f := writeFile(t, "deploy.yaml", seed65+"---\n"+noDrain)
	t.Chdir(filepath.Dir(f))
	code, out, errOut := runCheck(t, "", "--format", "sarif", "deploy.yaml")
	var log struct {
		Version string
		Runs    []struct {
			Results []struct {
				RuleID    string
				Level     string
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct{ URI, URIBaseID string }
						Region           struct{ StartLine int }
					}
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &log); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if code != 1 || errOut != "" || log.Version != "2.1.0" || len(log.Runs[0].Results) != 2 {
		t.Fatalf("sarif: exit %d, stderr %q, log %+v", code, errOut, log)
	}
	res := log.Runs[0].Results[0]
	loc := res.Locations[0].PhysicalLocation
	if res.RuleID != "shutdown-exceeds-grace" || res.Level != "error" || loc.ArtifactLocation.URI != "deploy.yaml" ||
		loc.ArtifactLocation.URIBaseID != "%SRCROOT%" || loc.Region.StartLine != 17 || log.Runs[0].Results[1].Level != "note" {
		t.Errorf("first result: %+v", res)
	}
	code, out, _ = runCheck(t, "", "--format", "junit", "deploy.yaml")
	var suites struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal([]byte(out), &suites); err != nil {
		t.Fatalf("not XML: %v\n%s", err, out)
	}
	if code != 1 || suites.Tests != 4 || suites.Failures != 1 {
		t.Errorf("junit: exit %d, %+v (want 2 pod templates + 2 containers, 1 failing)", code, suites)
	}
}

// TestCheckCmdStdinDocuments: from a pipe, a finding names its document and Helm's source.
func TestCheckCmdStdinDocuments(t *testing.T) {
	stream := "---\n# Source: shop/templates/svc.yaml\napiVersion: v1\nkind: Service\nmetadata: {name: shop}\n" +
		"---\n# Source: shop/templates/deploy.yaml\n" + seed65
	code, out, _ := runCheck(t, stream, "-")
	if code != 1 || !strings.HasPrefix(out, "<stdin>:24: error:") || !strings.HasSuffix(out, "(shutdown-exceeds-grace) [document 2, shop/templates/deploy.yaml]\n") {
		t.Errorf("exit %d, stdout %q", code, out)
	}
}

// TestCheckCmdHelpListsRules: --help names every rule, for --ignore and the annotation.
func TestCheckCmdHelpListsRules(t *testing.T) {
	_, out, _ := runCheck(t, "", "--help")
	for _, r := range check.Rules() {
		if !strings.Contains(out, "\n  "+r.ID+" ") {
			t.Errorf("--help does not list rule %s", r.ID)
		}
	}
	for _, opt := range []string{"--format text|json|sarif|junit", "--ignore RULE", "--severity-threshold", "--exclude PATTERN", "drainit.io/ignore"} {
		if !strings.Contains(out, opt) {
			t.Errorf("--help does not explain %s", opt)
		}
	}
}

// TestCheckCmdLenient: as pre-commit runs it, on every staged YAML file: a Helm template and a
// playbook named on the command line are left out, the timing error still fails the commit.
func TestCheckCmdLenient(t *testing.T) {
	dir := testenv.WriteTree(t, map[string]string{
		"k8s/web.yaml":                seed65,
		"chart/Chart.yaml":            "apiVersion: v2\nname: chart\nversion: 0.1.0\n",
		"chart/templates/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n",
		"ansible/site.yml":            "- hosts: all\n  tasks: []\n",
		".github/workflows/ci.yaml":   "on: [push]\njobs: {}\n",
	})
	t.Chdir(dir)
	files := []string{"k8s/web.yaml", "chart/Chart.yaml", "chart/templates/deploy.yaml", "ansible/site.yml", ".github/workflows/ci.yaml"}
	if code, out, _ := runCheck(t, "", files...); code != 2 || out != "" {
		t.Errorf("without --lenient: exit %d, stdout %q; want 2 at the first file that is no manifest", code, out)
	}
	code, out, errOut := runCheck(t, "", append([]string{"--lenient"}, files...)...)
	if code != 1 || !strings.HasPrefix(out, filepath.FromSlash("k8s/web.yaml")+":17: error:") || strings.Count(out, "\n") != 1 {
		t.Errorf("--lenient: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if !strings.Contains(errOut, "drainit check: chart: a Helm chart: its templates are manifests only once rendered: helm template chart | drainit check -\n") {
		t.Errorf("stderr %q: want the note about the chart", errOut)
	}
}

// TestCheckCmdHostileNames: a found file whose name holds a line break and terminal escapes is
// shown Go-quoted, in its finding on stdout and its problem on stderr: one line each, nothing a
// terminal would act on.
func TestCheckCmdHostileNames(t *testing.T) {
	if runtime.GOOS == "windows" {
		testenv.SkipElsewhere(t, "no control characters in Windows file names")
	}
	evil := "evil\n\x1b[31mRED\x1b[0m\r\x1b]0;title\a\"q"
	dir := testenv.WriteTree(t, map[string]string{
		evil + ".yaml":        seed65,
		evil + "-broken.yaml": "apiVersion: v1\nkind: Pod\nspec: [\n",
	})
	t.Chdir(dir)
	code, out, errOut := runCheck(t, "", ".")
	if code != 2 {
		t.Errorf("exit %d, want 2 for the broken file", code)
	}
	if want := strconv.Quote(evil+".yaml") + ":17: error: "; !strings.HasPrefix(out, want) || strings.Count(out, "\n") != 1 {
		t.Errorf("stdout %q, want one line starting %q", out, want)
	}
	if want := "drainit check: " + strconv.Quote(evil+"-broken.yaml") + ":3: not valid YAML"; !strings.HasPrefix(errOut, want) ||
		strings.Count(errOut, "\n") != 2 {
		t.Errorf("stderr %q, want the problem on one line starting %q, then the summary", errOut, want)
	}
	if strings.ContainsAny(out+errOut, "\x1b\r\a") {
		t.Errorf("control characters reach the terminal: %q %q", out, errOut)
	}
}

// TestCheckCmdTooLarge: an input over 64 MiB is not read: named, it stops the check with one
// line naming it; found, it is reported and the other files are still checked.
func TestCheckCmdTooLarge(t *testing.T) {
	dir := testenv.WriteTree(t, map[string]string{"k8s/orders.yaml": seed65, "k8s/huge.yaml": "a: b\n"})
	huge := filepath.Join(dir, "k8s", "huge.yaml")
	if err := os.Truncate(huge, 2<<30); err != nil {
		testenv.SkipUnlessCI(t, "no sparse files here: "+err.Error())
	}
	code, out, errOut := runCheck(t, "", huge)
	if want := "drainit check: " + huge + ": larger than 64 MiB: not read\n"; code != 2 || out != "" || errOut != want {
		t.Errorf("named: exit %d, stdout %q, stderr %q; want 2, nothing, %q", code, out, errOut, want)
	}
	code, out, errOut = runCheck(t, "", filepath.Join(dir, "k8s"))
	if code != 2 || strings.Count(out, "\n") != 1 || !strings.Contains(errOut, huge+": larger than 64 MiB: not read\n") {
		t.Errorf("found: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// The manifest check is its own product: of the init's packages it links only what both must
// agree on (the options and the time budget, the signals' names, the log's escaping, the
// version), never the parts that run an app (hooks, the supervisor, the drain watcher, the
// start-up entry point, the HTTP client and server).
func TestLinksNothingThatRunsAnApp(t *testing.T) {
	shared := []string{"internal/config", "signals", "internal/logline", "internal/buildinfo"}
	for _, pkg := range testenv.LinuxDeps(t) {
		own, ok := strings.CutPrefix(pkg, "github.com/drainit/drainit/")
		if ok && !strings.HasPrefix(own, "check") && !slices.Contains(shared, own) {
			t.Errorf("drainit-check links %s, a package of the init's", pkg)
		}
	}
}
