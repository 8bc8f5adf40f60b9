package check

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/drainit/drainit/internal/config"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from the current output")

// golden compares got with the golden file, or rewrites it under -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (go test -update rewrites it)\n--- got\n%s--- want\n%s", path, got, want)
	}
}

func checkFile(t *testing.T, path string) ([]Workload, []Finding) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := Read(filepath.Base(path), bytes.NewReader(data))
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return ws, Check(ws)
}

// TestGolden runs every manifest in testdata/rules/ and compares the text output with its
// .golden file: one file per rule, and the seed cases.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/rules/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test manifests: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			_, fs := checkFile(t, f)
			var out bytes.Buffer
			if err := WriteText(&out, fs); err != nil {
				t.Fatal(err)
			}
			golden(t, strings.TrimSuffix(f, ".yaml")+".golden", out.Bytes())
		})
	}
}

// TestGoldenJSON pins the JSON report's shape, which CI jobs parse.
func TestGoldenJSON(t *testing.T) {
	f := "testdata/rules/seed-grace60-prestop55-app10.yaml"
	ws, fs := checkFile(t, f)
	var out bytes.Buffer
	if err := WriteJSON(&out, NewReport(ws, fs)); err != nil {
		t.Fatal(err)
	}
	golden(t, "testdata/seed-grace60-prestop55-app10.json", out.Bytes())
}

// TestEveryRuleHasACase keeps the golden files honest: each rule fires somewhere in testdata.
func TestEveryRuleHasACase(t *testing.T) {
	files, _ := filepath.Glob("testdata/rules/*.yaml")
	seen := map[string]bool{}
	for _, f := range files {
		_, fs := checkFile(t, f)
		for _, x := range fs {
			seen[x.Rule] = true
		}
	}
	for _, r := range []string{RuleGraceZero, RulePreStopGrace, RuleShutdownGrace, RuleDrainitConfig, RuleDrainitGrace,
		RulePreStopServer, RulePreStopToken, RuleNoShell, RuleNoDrain, RuleSpringDuration,
		RuleStopSignalNotTrigger, RuleStopSignalImage, RuleStopSignalInvalid, RuleGraceNegative, RuleSidecarGrace, RuleAdaptiveUDP,
		RuleSignalsSandbox, RuleForwardMasterWorker, RuleAdaptiveMesh, RuleProbeGrace, RuleControlNoToken} {
		if !seen[r] {
			t.Errorf("rule %s fires in no testdata/rules manifest", r)
		}
	}
}

// The seed cases from the articles drainit was conceived from, asserted directly as well as
// through their golden files.
func TestSeeds(t *testing.T) {
	_, fs := checkFile(t, "testdata/rules/seed-grace60-prestop55-app10.yaml")
	if len(fs) != 1 || fs[0].Rule != RuleShutdownGrace || fs[0].Severity != Error || !strings.Contains(fs[0].Message, "needs 65s") {
		t.Errorf("grace 60 + preStop 55 + app 10: want one shutdown-exceeds-grace error saying 65s is needed, got %+v", fs)
	}
	if _, fs := checkFile(t, "testdata/rules/seed-grace45-sleep10-spring30.yaml"); len(fs) != 0 {
		t.Errorf("grace 45 + preStop 10 + Spring 30s fits, got %+v", fs)
	}
	_, fs = checkFile(t, "testdata/rules/seed-grace30-no-drain.yaml")
	if len(fs) != 1 || fs[0].Rule != RuleNoDrain || fs[0].Severity != Info {
		t.Errorf("no preStop, no drainit: want one no-drain info, got %+v", fs)
	}
}

// pod builds a one-container Pod manifest for the table tests.
func pod(grace string, container string) string {
	s := "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
	if grace != "" {
		s += "  terminationGracePeriodSeconds: " + grace + "\n"
	}
	return s + "  containers:\n  - name: c\n" + indent(container, "    ") + "\n"
}

func indent(s, by string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		lines[i] = by + l
	}
	return strings.Join(lines, "\n")
}

func rules(fs []Finding) string {
	var r []string
	for _, f := range fs {
		r = append(r, string(f.Severity)+":"+f.Rule)
	}
	return strings.Join(r, ",")
}

// withoutRule is fs less the findings of rule id.
func withoutRule(fs []Finding, id string) []Finding {
	var out []Finding
	for _, f := range fs {
		if f.Rule != id {
			out = append(out, f)
		}
	}
	return out
}

// TestArithmeticEdges checks the boundaries of each rule: where one second more or less flips it.
func TestArithmeticEdges(t *testing.T) {
	const spring = "env: [{name: SPRING_LIFECYCLE_TIMEOUT_PER_SHUTDOWN_PHASE, value: %s}]\n"
	cases := []struct {
		name, grace, container, want string
	}{
		{"preStop just under grace: the kubelet's 2s minimum", "30", "image: x\nlifecycle: {preStop: {sleep: {seconds: 29}}}", "warning:prestop-leaves-minimum"},
		{"preStop leaves exactly the minimum", "30", "image: x\nlifecycle: {preStop: {exec: {command: [sleep, '28']}}}", "warning:prestop-leaves-minimum"},
		{"preStop leaves more than the minimum", "30", "image: x\nlifecycle: {preStop: {exec: {command: [sleep, '27']}}}", ""},
		{"the minimum, the app's time known and within it", "30", "image: x\n" + strings.ReplaceAll(spring, "%s", "1s") + "lifecycle: {preStop: {sleep: {seconds: 29}}}", ""},
		{"the minimum, an app with no limit: shutdown-unbounded says it", "30", "image: x\ncommand: [uvicorn, a:app]\nlifecycle: {preStop: {sleep: {seconds: 29}}}", "info:shutdown-unbounded"},
		{"the minimum, drainit's drain and margin in it", "30", "image: x\ncommand: [/drainit, --grace-period=2s, --drain-delay=0s, --kill-margin=1s, --, /app]\nlifecycle: {preStop: {sleep: {seconds: 28}}}", "warning:prestop-leaves-minimum"},
		{"preStop equal to grace: the minimum too", "30", "image: x\nlifecycle: {preStop: {sleep: {seconds: 30}}}", "warning:prestop-leaves-minimum"},
		{"preStop over grace", "30", "image: x\nlifecycle: {preStop: {exec: {command: [sleep, '31']}}}", "error:prestop-exceeds-grace"},
		{"preStop equal to grace, the app's 2s within the minimum", "10", "image: x\ncommand: [gunicorn, --graceful-timeout=2, a:app]\nlifecycle: {preStop: {sleep: {seconds: 10}}}", ""},
		{"preStop equal to grace, the app's 3s not", "10", "image: x\ncommand: [gunicorn, --graceful-timeout=3, a:app]\nlifecycle: {preStop: {sleep: {seconds: 10}}}", "error:shutdown-exceeds-grace"},
		{"default grace is 30", "", "image: x\nlifecycle: {preStop: {exec: {command: [sleep, '31']}}}", "error:prestop-exceeds-grace"},
		{"sleep units add up", "99", "image: x\nlifecycle: {preStop: {exec: {command: [sleep, 1m, 40s]}}}", "error:prestop-exceeds-grace"},
		{"fits exactly", "40", "image: x\n" + strings.ReplaceAll(spring, "%s", "30s") + "lifecycle: {preStop: {sleep: {seconds: 10}}}", ""},
		{"one second over", "39", "image: x\n" + strings.ReplaceAll(spring, "%s", "30s") + "lifecycle: {preStop: {sleep: {seconds: 10}}}", "error:shutdown-exceeds-grace"},
		{"graceful default 30s", "35", "image: x\nenv: [{name: SERVER_SHUTDOWN, value: graceful}]\nlifecycle: {preStop: {sleep: {seconds: 10}}}", "error:shutdown-exceeds-grace"},
		{"shell variable resolved", "30", "image: x\nenv: [{name: DELAY, value: '40'}]\nlifecycle: {preStop: {exec: {command: [sh, -c, 'sleep $DELAY']}}}", "error:prestop-exceeds-grace"},
		{"sh -c -- script", "30", "image: x\nlifecycle: {preStop: {exec: {command: [sh, -c, --, 'sleep 40']}}}", "error:prestop-exceeds-grace"},
		{"bash -c script", "30", "image: x\nlifecycle: {preStop: {exec: {command: [/bin/bash, -c, 'sleep 40']}}}", "error:prestop-exceeds-grace"},
		{"sleep --", "30", "image: x\nlifecycle: {preStop: {exec: {command: [sleep, --, '40']}}}", "error:prestop-exceeds-grace"},
		{"sleep -- in a script", "30", "image: x\nlifecycle: {preStop: {exec: {command: [sh, -c, 'sleep -- 40']}}}", "error:prestop-exceeds-grace"},
		{"sleep INFINITY", "30", "image: x\nlifecycle: {preStop: {exec: {command: [sleep, INFINITY]}}}", "error:prestop-exceeds-grace"},
		{"drainit sleep --", "30", "image: x\nlifecycle: {preStop: {exec: {command: [/drainit, sleep, --, 40s]}}}", "error:prestop-exceeds-grace"},
		{"sh -c -e script", "30", "image: x\nlifecycle: {preStop: {exec: {command: [sh, -c, -e, 'sleep 40']}}}", "error:prestop-exceeds-grace"},
		{"sh -o pipefail -ec script", "30", "image: x\nlifecycle: {preStop: {exec: {command: [sh, -o, pipefail, -ec, 'sleep 40']}}}", "error:prestop-exceeds-grace"},
		{"busybox sleep in a script", "30", "image: x\nlifecycle: {preStop: {exec: {command: [sh, -c, 'busybox sleep 40']}}}", "error:prestop-exceeds-grace"},
		{"sh with a script file: not read", "30", "image: x\nlifecycle: {preStop: {exec: {command: [sh, --, /drain.sh]}}}", ""},
		{"sh option it does not know: not guessed", "30", "image: x\nlifecycle: {preStop: {exec: {command: [sh, -c, -k, 'sleep 40']}}}", ""},
		{"unknown variable: no guess", "30", "image: x\nlifecycle: {preStop: {exec: {command: [sh, -c, 'sleep ${DELAY}']}}}", ""},
		{"drainit runs drainit", "30", "image: x\ncommand: [/drainit, --, /drainit, --, /app]", "error:drainit-config"},
		{"drainit runs drainit from a script", "30", "image: x\ncommand: [sh, -c, 'exec /drainit -- /bin/drainit -- /app']", "error:drainit-config"},
		{"drainit runs drainit sleep", "30", "image: x\ncommand: [/drainit, --, /drainit, sleep, '1']", ""},
		{"drainit fits", "8", "image: x\ncommand: [/drainit, --grace-period=8s, --, /app]", ""},
		{"drainit drain+margin = grace", "7", "image: x\ncommand: [/drainit, --grace-period=7s, --, /app]", "error:drainit-config"},
		{"drainit flag beats env", "30", "image: x\ncommand: [/drainit, --grace-period=30s, --, /app]\nenv: [{name: DRAINIT_GRACE_PERIOD, value: 10s}]", ""},
		{"drainit grace from secret: unchecked", "60", "image: x\ncommand: [/drainit, --, /app]\nenv: [{name: DRAINIT_GRACE_PERIOD, valueFrom: {secretKeyRef: {name: s, key: k}}}]", ""},
		{"drainit default may come from envFrom", "60", "image: x\ncommand: [/drainit, --, /app]\nenvFrom: [{configMapRef: {name: drainit}}]", ""},
		{"drainit subcommand is not drainit running the app", "30", "image: x\ncommand: [/drainit, sleep, '3600']", "info:no-drain"},
		{"Kubernetes $(VAR) in args", "60", "image: x\ncommand: [/drainit]\nargs: [--grace-period, $(G), --, /app]\nenv: [{name: G, value: 60s}]", ""},
		{"escaped $$(VAR) stays literal", "60", "image: x\ncommand: [/drainit]\nargs: [--grace-period, $$(G), --, /app]\nenv: [{name: G, value: 60s}]", "error:drainit-config"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws, err := Read("p.yaml", strings.NewReader(pod(c.grace, c.container)))
			if err != nil {
				t.Fatalf("Read: %v\n%s", err, pod(c.grace, c.container))
			}
			if got := rules(Check(ws)); got != c.want {
				t.Errorf("got %q, want %q; findings: %+v", got, c.want, Check(ws))
			}
		})
	}
}

// TestMalformed: input that is not valid YAML, or whose fields have the wrong shape, is a
// ReadError naming the file and the line.
func TestMalformed(t *testing.T) {
	files, _ := filepath.Glob("testdata/malformed/*.yaml")
	if len(files) == 0 {
		t.Fatal("no malformed cases")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Read(filepath.Base(f), bytes.NewReader(data))
			var re *ReadError
			if !errors.As(err, &re) {
				t.Fatalf("want a *ReadError, got %v", err)
			}
			if re.File != filepath.Base(f) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error must name the file on one line: %q", err)
			}
			golden(t, strings.TrimSuffix(f, ".yaml")+".golden", []byte(err.Error()+"\n"))
		})
	}
}

func TestEmptyInputs(t *testing.T) {
	for _, in := range []string{"", "---\n", "# only a comment\n", "---\n...\n---\n"} {
		ws, err := Read("e.yaml", strings.NewReader(in))
		if err != nil || len(ws) != 0 {
			t.Errorf("Read(%q) = %v, %v; want nothing and no error", in, ws, err)
		}
	}
}

// TestReaderFields checks what the reader extracts from a manifest, field by field.
func TestReaderFields(t *testing.T) {
	ws, _ := checkFile(t, "testdata/rules/prestop-token.yaml")
	if len(ws) != 3 {
		t.Fatalf("want 3 pods, got %d", len(ws))
	}
	w := ws[1]
	if w.Kind != "Pod" || w.Name != "wrong-token" || w.Line != 20 || w.GraceSet || w.Grace != 30*time.Second {
		t.Errorf("workload: %+v", w)
	}
	c := w.Containers[0]
	wantCmd := []string{"/drainit", "--http-addr", ":8099", "--http-token", "s3cret", "--", "/app"}
	if c.Name != "app" || c.Line != 26 || !reflect.DeepEqual(c.Command, wantCmd) || c.Args != nil {
		t.Errorf("container: %+v", c)
	}
	h := c.PreStop
	if h == nil || h.HTTP == nil || h.HTTP.Port != 8099 || h.HTTP.Path != "/prestop" ||
		!reflect.DeepEqual(h.HTTP.Headers, []Header{{"Authorization", "Bearer secret"}}) {
		t.Errorf("preStop: %+v", h)
	}
	if c.ImageLine != 27 || c.StopSignalLine != 0 || c.StopSignal != "" {
		t.Errorf("image line %d, stop signal %q at %d; want 27 and none", c.ImageLine, c.StopSignal, c.StopSignalLine)
	}
	ws, _ = checkFile(t, "testdata/rules/stop-signal-not-trigger.yaml")
	if c := ws[0].Containers[0]; c.StopSignal != "SIGUSR1" || c.StopSignalLine != 14 || c.PreStop != nil {
		t.Errorf("stopSignal without preStop: %q at %d, preStop %+v; want SIGUSR1 at 14, none", c.StopSignal, c.StopSignalLine, c.PreStop)
	}
	if c := ws[1].Containers[0]; c.StopSignal != "SIGQUIT" || c.StopSignalLine != 28 || c.PreStop == nil || c.PreStop.HTTP == nil {
		t.Errorf("stopSignal beside a preStop: %q at %d, preStop %+v; want SIGQUIT at 28 and the httpGet", c.StopSignal, c.StopSignalLine, c.PreStop)
	}
	ws, _ = checkFile(t, "testdata/rules/anchors.yaml")
	if len(ws[0].Containers) != 2 || ws[0].Grace != 20*time.Second {
		t.Fatalf("anchors: %+v", ws)
	}
	for _, c := range ws[0].Containers {
		if c.Image != "app:1" || c.PreStop == nil || !c.PreStop.IsSleep || c.PreStop.Sleep != 20 {
			t.Errorf("merged container %q: %+v", c.Name, c)
		}
	}
}

// TestReadSidecars: init containers with restartPolicy Always are read after the containers,
// marked as sidecars; the others are not read at all.
func TestReadSidecars(t *testing.T) {
	ws, _ := checkFile(t, "testdata/rules/sidecar.yaml")
	var got []string
	for _, c := range ws[1].Containers {
		got = append(got, fmt.Sprintf("%s:%v", c.Name, c.Sidecar))
	}
	if want := "web:false,log-shipper:true,proxy:true"; strings.Join(got, ",") != want {
		t.Errorf("containers %s, want %s", strings.Join(got, ","), want)
	}
	if n := len(ws[0].Containers); n != 2 || ws[0].Containers[1].Name != "proxy" {
		t.Errorf("the plain init container is read: %+v", ws[0].Containers)
	}
	_, err := Read("p.yaml", strings.NewReader("kind: Pod\nspec:\n  initContainers: [{name: s, restartPolicy: Always, command: sh}]\n"))
	if err == nil || !strings.Contains(err.Error(), "p.yaml:3: spec.initContainers[0].command: want a list of strings") {
		t.Errorf("a sidecar's fields are read as a container's: %v", err)
	}
	if _, err := Read("p.yaml", strings.NewReader("kind: Pod\nspec:\n  initContainers: [{name: i, command: sh}]\n")); err != nil {
		t.Errorf("a plain init container's fields are not read: %v", err)
	}
}

// TestSidecarArithmetic: a sidecar's stop counts after the main containers', and one second
// more or less flips it.
func TestSidecarArithmetic(t *testing.T) {
	// mainStop is the app container's preStop: whole seconds as the sleep action, else
	// `drainit sleep`.
	pod := func(grace, mainStop, sidecar string) string {
		hook := "{sleep: {seconds: " + mainStop + "}}"
		if strings.HasSuffix(mainStop, "s") {
			hook = "{exec: {command: [/drainit, sleep, " + mainStop + "]}}"
		}
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  terminationGracePeriodSeconds: " + grace +
			"\n  containers:\n  - name: app\n    image: x\n    lifecycle: {preStop: " + hook + "}" +
			"\n  initContainers:\n  - name: side\n    image: x\n    restartPolicy: Always\n" + indent(sidecar, "    ") + "\n"
	}
	uvicorn := func(s string) string { return "command: [uvicorn, a:app, --timeout-graceful-shutdown, '" + s + "']" }
	uvicorn10 := uvicorn("10")
	cases := []struct {
		name, grace, mainStop, sidecar, want string
	}{
		{"fits exactly", "30", "20", uvicorn10, ""},
		{"one second over", "30", "21", uvicorn10, "error:sidecar-exceeds-grace"},
		{"its own preStop outlasts the app's: shutdown-exceeds-grace", "30", "5", uvicorn10 + "\nlifecycle: {preStop: {sleep: {seconds: 25}}}", "error:shutdown-exceeds-grace"},
		{"its preStop runs beside the app's", "30", "20", uvicorn10 + "\nlifecycle: {preStop: {sleep: {seconds: 15}}}", ""},
		{"no preStop, no drainit: no no-drain", "30", "5", "command: [/proxy]", ""},
		{"unknown stop: nothing to add", "30", "29", "command: [/proxy]", ""},
		// killContainer rounds the wait down to whole seconds (integration/node
		// TestSidecarWaitsForApp: 8 − floor(1.7) − floor(3.6) = 4 s on a real kubelet).
		{"the wait rounded down", "30", "20.9s", uvicorn10, ""},
		{"rounded down, still over", "30", "21.5s", uvicorn10, "error:sidecar-exceeds-grace"},
		{"its preStop and the wait rounded down together", "30", "20.9s", uvicorn10 + "\nlifecycle: {preStop: {exec: {command: [/drainit, sleep, 1.5s]}}}", ""},
		// ... and leaves at least 2 s (TestSidecarMinimumGrace).
		{"the kubelet's 2s minimum", "30", "29", uvicorn("2"), ""},
		{"more than the minimum", "30", "29", uvicorn("3"), "error:sidecar-exceeds-grace"},
		{"the app's preStop outlasts the grace period: the sidecar still gets 2s", "30", "40", uvicorn("2"), "error:prestop-exceeds-grace"},
	}
	atLeast := regexp.MustCompile(`set terminationGracePeriodSeconds to at least (\d+)`)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws, err := Read("p.yaml", strings.NewReader(pod(c.grace, c.mainStop, c.sidecar)))
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			// The app container's own sleep is TestArithmeticEdges's: here, what the sidecar gets.
			fs := withoutRule(Check(ws), RulePreStopMinimum)
			if got := rules(fs); got != c.want {
				t.Errorf("got %q, want %q; findings: %+v", got, c.want, fs)
			}
			// The grace period the message asks for is the least that fits.
			for _, f := range fs {
				m := atLeast.FindStringSubmatch(f.Message)
				if f.Rule != RuleSidecarGrace || m == nil {
					continue
				}
				need, _ := strconv.Atoi(m[1])
				for g, want := range map[int]string{need: "", need - 1: "error:sidecar-exceeds-grace"} {
					ws, err := Read("p.yaml", strings.NewReader(pod(strconv.Itoa(g), c.mainStop, c.sidecar)))
					if got := rules(withoutRule(Check(ws), RulePreStopMinimum)); err != nil || got != want {
						t.Errorf("grace %d, from the message %q: %v, got %q, want %q", g, f.Message, err, got, want)
					}
				}
			}
		})
	}
	plain := strings.Replace(pod("30", "25", uvicorn10), "restartPolicy: Always", "restartPolicy: OnFailure", 1)
	if ws, err := Read("p.yaml", strings.NewReader(plain)); err != nil || rules(Check(ws)) != "" {
		t.Errorf("an init container without restartPolicy Always: %v, %+v", err, Check(ws))
	}
}

func TestSleepArgs(t *testing.T) {
	cases := []struct {
		args []string
		want time.Duration
		ok   bool
	}{
		{[]string{"10"}, 10 * time.Second, true},
		{[]string{"0.5"}, 500 * time.Millisecond, true},
		{[]string{"1m", "30s"}, 90 * time.Second, true},
		{[]string{"2h"}, 2 * time.Hour, true},
		{[]string{"1d"}, 24 * time.Hour, true},
		{[]string{"infinity"}, forever, true},
		{[]string{"1e300"}, forever, true},
		{[]string{}, 0, false},
		{[]string{"x"}, 0, false},
		{[]string{"-1"}, 0, false},
		{[]string{"NaN"}, 0, false},
		// "--" ends the options to GNU sleep and busybox's: a preStop `sleep -- 10` sleeps 10 s.
		{[]string{"--", "10"}, 10 * time.Second, true},
		{[]string{"--", "--", "10"}, 0, false},
		{[]string{"--"}, 0, false},
		{[]string{"INFINITY"}, forever, true},
		{[]string{"Inf"}, forever, true},
	}
	for _, c := range cases {
		got, ok := sleepArgs(c.args)
		if got != c.want || ok != c.ok {
			t.Errorf("sleepArgs(%q) = %v, %v; want %v, %v", c.args, got, ok, c.want, c.ok)
		}
	}
}

func TestScriptSleep(t *testing.T) {
	cases := []struct {
		script string
		want   time.Duration
		exact  bool
	}{
		{"sleep 10", 10 * time.Second, true},
		{"sleep 5 && sleep 5", 10 * time.Second, true},
		{"sleep 5; nginx -s quit", 5 * time.Second, false},
		{"exec sleep 7", 7 * time.Second, true},
		{"echo draining; sleep 3 || true", 3 * time.Second, true},
		{"sleep 60 &", 0, false},
		{"while true; do sleep 1; done", 0, false},
		{"if [ -f /x ]; then sleep 9; fi; sleep 2", 2 * time.Second, false},
		{`sleep "4"`, 4 * time.Second, true},
		{"sleep 2 # and a comment; sleep 100", 2 * time.Second, true},
		{"sleep ${D:-5}", 0, false},
		{"/drainit sleep 1500ms", 1500 * time.Millisecond, true},
		{"/drainit sleep -- 2", 2 * time.Second, true},
		{"/drainit sleep -- -- 2", 0, false},
		{"busybox sleep 6", 6 * time.Second, true},
		{"/bin/busybox sleep 6 && sleep 1", 7 * time.Second, true},
		// What may not run is not counted; the sides of a pipe run at once.
		{"sleep 6 || sleep 6", 6 * time.Second, true},
		{"sleep 6 | sleep 6", 6 * time.Second, true},
		{"sleep 2 | sleep 6", 6 * time.Second, true},
		{"sleep 6 | cat", 6 * time.Second, false},
		{"[ -e /ready ] && sleep 20", 0, false},
		{"test -f /x || sleep 20", 0, false},
		{"sleep 5 && nginx -s quit && sleep 5", 5 * time.Second, false},
		{"true &&\n sleep 5", 5 * time.Second, true},
		{"deregister && ( sleep 5 )", 0, false},
		{"( sleep 5 ) &", 0, false},
		{"{ sleep 5; } & sleep 1", time.Second, false},
		{"exit 0; sleep 20", 0, true},
		{"sleep 3; exit 0; sleep 20", 3 * time.Second, true},
		{"test -f /x || exit 0; sleep 5", 0, false},
		{"exec nginx -s quit; sleep 5", 0, false},
		{"exec sleep 7; sleep 5", 7 * time.Second, true},
		// Redirections are not operands, and their & does not send to the background.
		{"sleep 10 >/dev/null 2>&1", 10 * time.Second, true},
		{"sleep 10 2>&1", 10 * time.Second, true},
		{"sleep 10 > /dev/null", 10 * time.Second, true},
		{"sleep 10 &> /dev/null", 10 * time.Second, true},
		{"sleep 10 >| /tmp/x", 10 * time.Second, true},
		{"sleep 10 2> /dev/null &", 0, false},
	}
	for _, c := range cases {
		got, exact := scriptSleep(c.script, envMap{})
		if got != c.want || exact != c.exact {
			t.Errorf("scriptSleep(%q) = %v, %v; want %v, %v", c.script, got, exact, c.want, c.exact)
		}
	}
}

// TestShellScript: the script of sh -c is the first operand after all the options, as the
// shells read their arguments; what it cannot place stays not understood.
func TestShellScript(t *testing.T) {
	cases := []struct {
		prog string
		args []string
		want string // "" for not understood
	}{
		{"sh", []string{"-c", "sleep 5"}, "sleep 5"},
		{"sh", []string{"-c", "--", "sleep 5"}, "sleep 5"},
		{"sh", []string{"-c", "-", "sleep 5"}, "sleep 5"},
		{"sh", []string{"-ec", "--", "sleep 5"}, "sleep 5"},
		{"sh", []string{"-e", "-c", "sleep 5"}, "sleep 5"},
		{"sh", []string{"-c", "-e", "sleep 5"}, "sleep 5"},
		{"sh", []string{"-c", "+x", "sleep 5"}, "sleep 5"},
		{"sh", []string{"-o", "pipefail", "-c", "sleep 5"}, "sleep 5"},
		{"sh", []string{"-eo", "pipefail", "-c", "sleep 5"}, "sleep 5"},
		{"sh", []string{"-c", "sleep 5", "--"}, "sleep 5"},
		{"sh", []string{"-c", "sleep 5", "name", "arg"}, "sleep 5"},
		{"bash", []string{"--norc", "--noprofile", "-lc", "sleep 5"}, "sleep 5"},
		{"bash", []string{"--rcfile", "/etc/rc", "-c", "sleep 5"}, "sleep 5"},
		{"bash", []string{"-O", "extglob", "-c", "sleep 5"}, "sleep 5"},
		{"sh", []string{"/drain.sh"}, ""},
		{"sh", []string{"-e", "/drain.sh"}, ""},
		{"sh", []string{"--", "/drain.sh"}, ""},
		{"sh", []string{"-c"}, ""},
		{"sh", []string{"-c", "--"}, ""},
		{"sh", []string{"-c", ""}, ""},
		{"sh", []string{"-c", "-o"}, ""},
		{"sh", []string{"-c", "-k", "sleep 5"}, ""},
		{"sh", []string{"--norc", "-c", "sleep 5"}, ""},
		{"bash", []string{"--unknown", "-c", "sleep 5"}, ""},
		{"sh", []string{"+c", "sleep 5"}, ""},
	}
	for _, c := range cases {
		got, ok := shellScript(c.prog, c.args)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("shellScript(%q, %q) = %q, %v; want %q", c.prog, c.args, got, ok, c.want)
		}
	}
}

func TestParseSpringDuration(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		bare bool
		err  bool
	}{
		{"30s", 30 * time.Second, false, false},
		{"30S", 30 * time.Second, false, false},
		{"500ms", 500 * time.Millisecond, false, false},
		{"1m", time.Minute, false, false},
		{"30", 30 * time.Millisecond, true, false},
		{"PT30S", 30 * time.Second, false, false},
		{"pt1m30s", 90 * time.Second, false, false},
		{"PT0.5S", 500 * time.Millisecond, false, false},
		{"P1D", 24 * time.Hour, false, false},
		{"P1DT1H", 25 * time.Hour, false, false},
		{"PT1.5M", 0, false, true},
		{"PT1S1M", 0, false, true},
		{"PT1M30S", 90 * time.Second, false, false},
		{"PTT1S", 0, false, true},
		{"P1H", 0, false, true},
		{"P", 0, false, true},
		{"PT", 0, false, true},
		{"30 s", 0, false, true},
		{"30y", 0, false, true},
		{"-5s", 0, false, true},
		{"", 0, false, true},
		{"s", 0, false, true},
	}
	for _, c := range cases {
		got, bare, err := parseSpringDuration(c.in)
		if (err != nil) != c.err || (err == nil && (got != c.want || bare != c.bare)) {
			t.Errorf("parseSpringDuration(%q) = %v, %v, %v; want %v, %v, err %v", c.in, got, bare, err, c.want, c.bare, c.err)
		}
	}
}

func TestExpandShell(t *testing.T) {
	env := envMap{vars: map[string]EnvVar{
		"D": {Name: "D", Value: "5", Known: true}, "D_2": {Name: "D_2", Value: "7", Known: true},
		"S": {Name: "S", Known: false},
	}}
	for in, want := range map[string]string{
		"$D": "5", "${D}": "5", "$D_2": "7", "${D}0": "50", "x$D": "x5", "$Dx": "$Dx",
		"${D:-1}": "${D:-1}", "$S": "$S", "$$": "$$", "$": "$", "${": "${", "${}": "${}", "$1": "$1",
	} {
		if got := env.expandShellWord(in); got != want {
			t.Errorf("expandShellWord(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"$(D)": "5", "$$(D)": "$(D)", "$(S)": "$(S)", "$(NOPE)": "$(NOPE)", "a$(D)b": "a5b", "$(": "$(", "$": "$",
	} {
		if got := env.expandK8s(in, false); got != want {
			t.Errorf("expandK8s(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIsShellless(t *testing.T) {
	for image, want := range map[string]bool{
		"gcr.io/distroless/static:nonroot":              true,
		"gcr.io/distroless/java21-debian12":             true,
		"gcr.io/distroless/base:debug":                  false,
		"gcr.io/distroless/base:debug-nonroot":          false,
		"mirror.example.com/distroless/static@sha256:0": true,
		"cgr.dev/chainguard/static:latest":              true,
		"cgr.dev/chainguard/busybox":                    false,
		"ghcr.io/acme/scratchpad-api:1.4":               false,
		"registry.example.com/tools/scratch-app:2":      false,
		"localhost:5000/app:1":                          false,
		"nginx":                                         false,
	} {
		if got := isShellless(image); got != want {
			t.Errorf("isShellless(%q) = %v, want %v", image, got, want)
		}
	}
}

// TestDefaultsAreDrainits: with nothing set, the check reads drainit's own defaults (it has
// none of its own to drift from internal/config's).
func TestDefaultsAreDrainits(t *testing.T) {
	cfg, err := config.Parse([]string{"/app"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctr := &Container{Command: []string{"/drainit", "--", "/app"}, CommandLines: []int{1, 1, 1}}
	dc := findDrainit(ctr, newEnvMap(ctr))
	if dc == nil || len(dc.errs) != 0 {
		t.Fatalf("an unconfigured drainit: %+v", dc)
	}
	for _, d := range []struct {
		name      string
		got, want time.Duration
		s         durSetting
	}{
		{"grace period", dc.grace.d, cfg.GracePeriod, dc.grace}, {"drain", dc.drain.d, cfg.Budget().Drain, dc.drain},
		{"kill margin", dc.margin.d, cfg.KillMargin, dc.margin},
	} {
		if d.got != d.want || !d.s.known || d.s.src != "" {
			t.Errorf("%s: check reads %v (%+v), drainit's default is %v", d.name, d.got, d.s, d.want)
		}
	}
	if !dc.trigKnown || !reflect.DeepEqual(dc.trig, cfg.Triggers) || dc.triggers.raw != "TERM,INT" {
		t.Errorf("triggers: check reads %v from %q, drainit's default is %v", dc.trig, dc.triggers.raw, cfg.Triggers)
	}
	// Secrets and envFrom hide the defaults too: nothing is known, nothing is an error.
	ctr.EnvFrom = true
	if dc := findDrainit(ctr, newEnvMap(ctr)); dc.grace.known || dc.trigKnown || len(dc.errs) != 0 || dc.grace.d != cfg.GracePeriod {
		t.Errorf("with envFrom: %+v", dc)
	}
}

func TestJSONReportNeverNull(t *testing.T) {
	var out bytes.Buffer
	if err := WriteJSON(&out, NewReport(nil, nil)); err != nil {
		t.Fatal(err)
	}
	var r struct {
		Findings []Finding `json:"findings"`
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || r.Findings == nil || !strings.Contains(out.String(), `"findings": []`) {
		t.Errorf("empty report: %s (%v)", out.String(), err)
	}
}

// TestMergeKeysLinear: merge keys can name one anchor many times at every level (a "billion
// laughs" in merge form); the reader searches each mapping once per field instead of once per
// path to it.
func TestMergeKeysLinear(t *testing.T) {
	var b strings.Builder
	b.WriteString("x0: &x0 {k: v}\n")
	const levels = 12
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "x%d: &x%d {<<: [*x%d, *x%d, *x%d, *x%d]}\n", i, i, i-1, i-1, i-1, i-1)
	}
	fmt.Fprintf(&b, "kind: Pod\nspec: {<<: *x%d}\n", levels)
	r := &reader{file: "p.yaml"}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(b.String()), &doc); err != nil {
		t.Fatal(err)
	}
	if err := r.object(doc.Content[0], "", 0); err != nil {
		t.Fatal(err)
	}
	// A handful of fields are looked up, each through at most levels+2 mappings.
	if r.visits > 20*(levels+2) {
		t.Errorf("%d mappings searched for %d levels of merges: the walk is not linear", r.visits, levels)
	}
}

// TestStopSignal: the pod's lifecycle.stopSignal must be one of drainit's triggers, worked out as
// drainit does (--triggers, default TERM,INT, plus --stop-signal; flag over variable; names,
// SIG-prefixed names and numbers alike); an nginx or php-fpm image, by its name, needs SIGQUIT
// among them; a stopSignal the API server rejects is reported, not a crash.
func TestStopSignal(t *testing.T) {
	const run = "command: [/drainit, --, /app]\n"
	ss := func(sig string) string { return "lifecycle: {stopSignal: " + sig + "}\n" }
	const nt, iq, inv = "error:stop-signal-not-trigger", "warning:stop-signal-image", "error:stop-signal-invalid"
	cases := []struct {
		name, container, want string
	}{
		// lifecycle.stopSignal against the trigger set.
		{"SIGTERM is a default trigger", "image: x\n" + run + ss("SIGTERM"), ""},
		{"SIGINT is a default trigger", "image: x\n" + run + ss("SIGINT"), ""},
		{"SIGQUIT is not", "image: x\n" + run + ss("SIGQUIT"), nt},
		{"SIGUSR1 is not", "image: x\n" + run + ss("SIGUSR1"), nt},
		{"--triggers adds it", "image: x\ncommand: [/drainit, '--triggers=TERM,QUIT', --, /app]\n" + ss("SIGQUIT"), ""},
		{"--triggers as two words, SIG prefix", "image: x\ncommand: [/drainit, --triggers, 'TERM,SIGQUIT', --, /app]\n" + ss("SIGQUIT"), ""},
		{"--triggers by number", "image: x\ncommand: [/drainit, '--triggers=15,3', --, /app]\n" + ss("SIGQUIT"), ""},
		{"--triggers replaces the default", "image: x\ncommand: [/drainit, --triggers=QUIT, --, /app]\n" + ss("SIGTERM"), nt},
		{"--triggers= empty", "image: x\ncommand: [/drainit, --triggers=, --, /app]\n" + ss("SIGTERM"), nt},
		{"--stop-signal is a trigger", "image: x\ncommand: [/drainit, --stop-signal, QUIT, --, /app]\n" + ss("SIGQUIT"), ""},
		{"--stop-signal by number", "image: x\ncommand: [/drainit, --stop-signal=3, --, /app]\n" + ss("SIGQUIT"), ""},
		{"--stop-signal with empty triggers", "image: x\ncommand: [/drainit, --triggers=, --stop-signal=USR1, --, /app]\n" + ss("SIGUSR1"), ""},
		{"DRAINIT_STOP_SIGNAL", "image: x\n" + run + "env: [{name: DRAINIT_STOP_SIGNAL, value: QUIT}]\n" + ss("SIGQUIT"), ""},
		{"DRAINIT_TRIGGERS", "image: x\n" + run + "env: [{name: DRAINIT_TRIGGERS, value: 'TERM,USR2'}]\n" + ss("SIGUSR2"), ""},
		{"--stop-signal beats DRAINIT_STOP_SIGNAL", "image: x\ncommand: [/drainit, --stop-signal=USR1, --, /app]\nenv: [{name: DRAINIT_STOP_SIGNAL, value: QUIT}]\n" + ss("SIGQUIT"), nt},
		{"--triggers beats DRAINIT_TRIGGERS", "image: x\ncommand: [/drainit, --triggers=TERM, --, /app]\nenv: [{name: DRAINIT_TRIGGERS, value: QUIT}]\n" + ss("SIGQUIT"), nt},
		{"flag wins the other way too", "image: x\ncommand: [/drainit, --stop-signal=QUIT, --, /app]\nenv: [{name: DRAINIT_STOP_SIGNAL, value: USR1}]\n" + ss("SIGQUIT"), ""},
		{"shell script", "image: x\ncommand: [sh, -c, 'exec /drainit --stop-signal QUIT -- nginx']\n" + ss("SIGQUIT"), ""},
		{"drainit as ENTRYPOINT, args", "image: x\nargs: [--stop-signal, QUIT, --, nginx]\nenv: [{name: DRAINIT_DRAIN_DELAY, value: 5s}]\n" + ss("SIGQUIT"), ""},
		{"$(VAR) in args", "image: x\ncommand: [/drainit]\nargs: [--stop-signal, $(S), --, /app]\nenv: [{name: S, value: QUIT}]\n" + ss("SIGQUIT"), ""},
		{"real-time signal", "image: x\ncommand: [/drainit, --stop-signal=RTMIN+2, --, /app]\n" + ss("SIGRTMIN+2"), ""},
		{"SIGRTMAX-1 is 63", "image: x\ncommand: [/drainit, '--triggers=TERM,63', --, /app]\n" + ss("SIGRTMAX-1"), ""},
		{"SIGPOLL is SIGIO", "image: x\ncommand: [/drainit, --stop-signal=IO, --, /app]\n" + ss("SIGPOLL"), ""},
		{"SIGKILL can never be a trigger", "image: x\n" + run + ss("SIGKILL"), nt},
		{"SIGIOT is SIGABRT, never forwarded", "image: x\n" + run + ss("SIGIOT"), nt},
		{"SIGCLD is SIGCHLD, accepted by the API", "image: x\n" + run + ss("SIGCLD"), nt},
		{"--stop-signal KILL adds no trigger", "image: x\ncommand: [/drainit, --stop-signal=KILL, --, /app]\n" + ss("SIGKILL"), nt},
		{"drainit preStop drained first: warning", "image: x\ncommand: [/drainit, --http-addr=:8099, --http-token=t, --, /app]\n" +
			"lifecycle: {stopSignal: SIGUSR1, preStop: {httpGet: {path: /prestop, port: 8099, httpHeaders: [{name: Authorization, value: Bearer t}]}}}",
			"warning:stop-signal-not-trigger"},
		{"preStop sleep waited first: warning", "image: x\n" + run + "env: [{name: DRAINIT_GRACE_PERIOD, value: 25s}]\nlifecycle: {stopSignal: SIGUSR1, preStop: {sleep: {seconds: 5}}}", "warning:stop-signal-not-trigger"},
		{"preStop that does nothing: error", "image: x\n" + run + "lifecycle: {stopSignal: SIGUSR1, preStop: {exec: {command: [/bin/true]}}}", nt},
		{"no drainit: not this rule", "image: x\n" + ss("SIGUSR1"), "info:no-drain"},
		{"drainit subcommand: not drainit running the app", "image: x\ncommand: [/drainit, sleep, '3600']\n" + ss("SIGUSR1"), "info:no-drain"},
		{"triggers from a secret: unchecked", "image: x\n" + run + "env: [{name: DRAINIT_TRIGGERS, valueFrom: {secretKeyRef: {name: s, key: k}}}]\n" + ss("SIGQUIT"), ""},
		{"stop signal from a ConfigMap: unchecked", "image: x\n" + run + "env: [{name: DRAINIT_STOP_SIGNAL, valueFrom: {configMapKeyRef: {name: s, key: k}}}]\n" + ss("SIGQUIT"), ""},
		{"envFrom may set them: unchecked", "image: x\n" + run + "envFrom: [{configMapRef: {name: drainit}}]\n" + ss("SIGQUIT"), ""},
		{"bad --triggers: drainit will not start", "image: x\ncommand: [/drainit, '--triggers=TERM,NOPE', --, /app]\n" + ss("SIGQUIT"), "error:drainit-config"},
		{"bad DRAINIT_STOP_SIGNAL: drainit will not start", "image: x\n" + run + "env: [{name: DRAINIT_STOP_SIGNAL, value: '99'}]\n" + ss("SIGQUIT"), "error:drainit-config"},
		{"KILL in --triggers: drainit will not start", "image: x\ncommand: [/drainit, --triggers=KILL, --, /app]", "error:drainit-config"},

		// Values the API server rejects.
		{"no SIG prefix", "image: x\n" + run + ss("QUIT"), inv},
		{"lower case", "image: x\n" + run + ss("sigquit"), inv},
		{"a number", "image: x\n" + run + ss("3"), inv},
		{"a quoted number", "image: x\n" + run + ss("'3'"), inv},
		{"unknown name", "image: x\n" + run + ss("SIGFOO"), inv},
		{"empty string", "image: x\n" + run + ss("''"), inv},
		{"SIGRTMIN+16 is past the API's list", "image: x\n" + run + ss("SIGRTMIN+16"), inv},
		{"rejected without drainit too", "image: x\nlifecycle: {stopSignal: TERM, preStop: {sleep: {seconds: 5}}}", inv},
		{"null is unset", "image: x\n" + run + ss("null"), ""},

		// nginx and php-fpm images, by name, with no stopSignal.
		{"nginx", "image: nginx:1.27\n" + run, iq},
		{"nginx, full reference", "image: docker.io/library/nginx:1.27-alpine\n" + run, iq},
		{"bitnami/nginx", "image: bitnami/nginx\n" + run, iq},
		{"nginx-unprivileged", "image: nginxinc/nginx-unprivileged:stable\n" + run, iq},
		{"nginx by digest, registry with a port", "image: 'localhost:5000/nginx@sha256:0123'\n" + run, iq},
		{"php:8.3-fpm", "image: php:8.3-fpm\n" + run, iq},
		{"bitnami/php-fpm", "image: bitnami/php-fpm:8.3\n" + run, iq},
		{"upper case", "image: NGINX\n" + run, iq},
		{"drainit as ENTRYPOINT", "image: nginx\nenv: [{name: DRAINIT_DRAIN_DELAY, value: 5s}]", iq},
		{"after a drainit preStop still a warning", "image: nginx\ncommand: [/drainit, --http-addr=:8099, --http-token=t, --, nginx]\n" +
			"lifecycle: {preStop: {httpGet: {path: /prestop, port: 8099, httpHeaders: [{name: Authorization, value: Bearer t}]}}}", iq},
		{"nginx with DRAINIT_STOP_SIGNAL=QUIT", "image: nginx\n" + run + "env: [{name: DRAINIT_STOP_SIGNAL, value: QUIT}]", ""},
		{"nginx with --stop-signal SIGQUIT", "image: nginx\ncommand: [/drainit, --stop-signal=SIGQUIT, --, nginx]", ""},
		{"nginx with QUIT in --triggers", "image: nginx\ncommand: [/drainit, '--triggers=TERM,INT,QUIT', --, nginx]", ""},
		{"nginx with --stop-signal TERM", "image: nginx\ncommand: [/drainit, --stop-signal=TERM, --, nginx]", iq},
		{"nginx with the pod's stopSignal set", "image: nginx\n" + run + ss("SIGTERM"), ""},
		{"nginx without drainit: not this rule", "image: nginx", "info:no-drain"},
		{"nginx, triggers from a secret", "image: nginx\n" + run + "env: [{name: DRAINIT_TRIGGERS, valueFrom: {secretKeyRef: {name: s, key: k}}}]", ""},
		{"php CLI image", "image: php:8.3-cli\n" + run, ""},
		{"php apache image: STOPSIGNAL SIGWINCH", "image: php:8.3-apache\n" + run, iq},
		{"httpd with --stop-signal WINCH", "image: httpd:2.4\ncommand: [/drainit, --stop-signal=WINCH, --, httpd-foreground]", ""},
		{"haproxy with DRAINIT_STOP_SIGNAL=USR1 and --forward group", "image: haproxy:3.0\n" + run + "env: [{name: DRAINIT_STOP_SIGNAL, value: USR1}]", "warning:forward-master-worker"},
		{"haproxy with DRAINIT_STOP_SIGNAL=USR1 and DRAINIT_FORWARD=child", "image: haproxy:3.0\n" + run + "env: [{name: DRAINIT_STOP_SIGNAL, value: USR1}, {name: DRAINIT_FORWARD, value: child}]", ""},
		{"haproxy with --forward=child", "image: haproxy:3.0\ncommand: [/drainit, --stop-signal=USR1, --forward=child, --, haproxy]", ""},
		{"haproxy, forward from a ConfigMap: unchecked", "image: haproxy:3.0\ncommand: [/drainit, --stop-signal=USR1, --, haproxy]\nenv: [{name: DRAINIT_FORWARD, valueFrom: {configMapKeyRef: {name: s, key: k}}}]", ""},
		{"haproxy-ingress is another program", "image: haproxy-ingress:0.14\ncommand: [/drainit, --stop-signal=USR1, --, haproxy]", ""},
		{"haproxy with --stop-signal QUIT", "image: haproxy:3.0\ncommand: [/drainit, --stop-signal=QUIT, --, haproxy]", iq},
		{"nginx elsewhere in the name", "image: registry.example.com/my-nginx-app:1\n" + run, ""},
		{"nginx as a registry path", "image: nginx.example.com/app:1\n" + run, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := pod("", c.container)
			ws, err := Read("p.yaml", strings.NewReader(m))
			if err != nil {
				t.Fatalf("Read: %v\n%s", err, m)
			}
			if got := rules(Check(ws)); got != c.want {
				t.Errorf("got %q, want %q; findings: %+v\n%s", got, c.want, Check(ws), m)
			}
		})
	}
}

// TestStopSignalMessages: the findings point at the line to change and spell out the signal,
// the triggers and where they come from, and the fix.
func TestStopSignalMessages(t *testing.T) {
	one := func(t *testing.T, m string) Finding {
		t.Helper()
		ws, err := Read("p.yaml", strings.NewReader(m))
		if err != nil {
			t.Fatal(err)
		}
		fs := Check(ws)
		if len(fs) != 1 {
			t.Fatalf("want one finding, got %+v", fs)
		}
		return fs[0]
	}
	// pod() puts the container's first line on line 7.
	f := one(t, pod("", "image: app:1\ncommand: [/drainit, --triggers=TERM, --, /app]\nenv: [{name: DRAINIT_TRIGGERS, value: 'TERM,USR1'}]\nlifecycle:\n  stopSignal: SIGUSR1"))
	for _, s := range []string{"SIGUSR1", `SIGTERM (--triggers "TERM")`, "at once", "no drain", "--stop-signal USR1", "DRAINIT_STOP_SIGNAL=USR1", "add USR1 to --triggers"} {
		if !strings.Contains(f.Message, s) {
			t.Errorf("not-trigger message lacks %q: %s", s, f.Message)
		}
	}
	if f.Line != 11 || f.Severity != Error {
		t.Errorf("not-trigger: line %d severity %s, want the stopSignal line 11, error", f.Line, f.Severity)
	}

	f = one(t, pod("", "image: app:1\ncommand: [/drainit, --stop-signal=USR2, --, /app]\nlifecycle: {stopSignal: SIGQUIT}"))
	if !strings.Contains(f.Message, `SIGTERM, SIGINT, SIGUSR2 (--triggers default "TERM,INT", --stop-signal "USR2")`) {
		t.Errorf("the trigger set must include the stop signal and name both sources: %s", f.Message)
	}

	f = one(t, pod("", "image: app:1\ncommand: [/drainit, --, /app]\nlifecycle: {stopSignal: SIGKILL}"))
	if !strings.Contains(f.Message, "can never be one of drainit's triggers") || strings.Contains(f.Message, "--stop-signal KILL") {
		t.Errorf("SIGKILL: must not suggest making it a trigger: %s", f.Message)
	}

	f = one(t, pod("", "command: [/drainit, --, /docker-entrypoint.sh, nginx]\nimage: nginx:1.27"))
	if f.Line != 8 || f.Rule != RuleStopSignalImage || f.Severity != Warning {
		t.Errorf("image-quit: %+v; want a warning on the image line 8", f)
	}
	for _, s := range []string{`"nginx:1.27"`, "guess from its name", "STOPSIGNAL SIGQUIT", "no drain", "--stop-signal QUIT"} {
		if !strings.Contains(f.Message, s) {
			t.Errorf("image-quit message lacks %q: %s", s, f.Message)
		}
	}

	for _, c := range []struct{ image, sig, short, app, more string }{
		{"httpd:2.4", "SIGWINCH", "WINCH", "Apache httpd", "(its graceful stop)"},
		{"php:8.3-apache", "SIGWINCH", "WINCH", "Apache httpd", "(its graceful stop)"},
		{"haproxy:3.0", "SIGUSR1", "USR1", "haproxy", "(DRAINIT_STOP_SIGNAL=USR1) and --forward child"},
	} {
		f = one(t, pod("", "command: [/drainit, --, /usr/local/bin/docker-entrypoint.sh]\nimage: "+c.image))
		if f.Line != 8 || f.Rule != RuleStopSignalImage || f.Severity != Warning {
			t.Errorf("%s: %+v; want a warning on the image line 8", c.image, f)
		}
		for _, s := range []string{"looks like " + c.app, "STOPSIGNAL " + c.sig, "forwards " + c.sig + " to the app at once",
			"--stop-signal " + c.short + " (DRAINIT_STOP_SIGNAL=" + c.short + ")", c.more} {
			if !strings.Contains(f.Message, s) {
				t.Errorf("%s: message lacks %q: %s", c.image, s, f.Message)
			}
		}
		// The image's signal as drainit's stop signal, or as one of its triggers: nothing to say
		// (with --forward child for haproxy: forward-master-worker).
		forward := ""
		if strings.Contains(c.more, "--forward child") {
			forward = "--forward=child, "
		}
		for _, flag := range []string{"--stop-signal=" + c.short, "'--triggers=TERM," + c.short + "'"} {
			ws, err := Read("p.yaml", strings.NewReader(pod("", "command: [/drainit, "+forward+flag+", --, /app]\nimage: "+c.image)))
			if err != nil {
				t.Fatal(err)
			}
			if got := rules(Check(ws)); got != "" {
				t.Errorf("%s with %s: got %q, want nothing", c.image, flag, got)
			}
		}
	}

	f = one(t, pod("", "image: app:1\nlifecycle: {stopSignal: quit, preStop: {sleep: {seconds: 5}}}"))
	if f.Rule != RuleStopSignalInvalid || f.Line != 8 || !strings.Contains(f.Message, `write "SIGQUIT"`) {
		t.Errorf("invalid: %+v; want stop-signal-invalid on line 8 suggesting SIGQUIT", f)
	}
}

// TestTriggersMatchDrainit: the trigger set the check reads from a manifest is the one drainit
// computes from the same flags and variables.
func TestTriggersMatchDrainit(t *testing.T) {
	cases := []struct {
		args []string
		env  map[string]string
	}{
		{nil, nil},
		{[]string{"--triggers=TERM,QUIT"}, nil},
		{[]string{"--triggers", "sigterm, 3 ,USR1"}, nil},
		{[]string{"--triggers="}, nil},
		{[]string{"--stop-signal=QUIT"}, nil},
		{[]string{"--stop-signal=TERM"}, nil},
		{[]string{"--stop-signal=KILL"}, nil},
		{[]string{"--stop-signal=RTMIN+3", "--triggers=INT"}, nil},
		{nil, map[string]string{"DRAINIT_TRIGGERS": "HUP", "DRAINIT_STOP_SIGNAL": "WINCH"}},
		{[]string{"--triggers=USR2"}, map[string]string{"DRAINIT_TRIGGERS": "HUP", "DRAINIT_STOP_SIGNAL": "QUIT"}},
		{[]string{"-stop-signal", "USR1"}, map[string]string{"DRAINIT_STOP_SIGNAL": "QUIT"}},
	}
	for _, c := range cases {
		cfg, err := config.Parse(append(append([]string{}, c.args...), "--", "/app"), c.env, nil)
		if err != nil {
			t.Fatalf("%q %v: drainit refuses it: %v", c.args, c.env, err)
		}
		ctr := &Container{Command: append(append([]string{"/drainit"}, c.args...), "--", "/app")}
		ctr.CommandLines = make([]int, len(ctr.Command))
		for name, v := range c.env {
			ctr.Env = append(ctr.Env, EnvVar{Name: name, Value: v, Known: true})
		}
		dc := findDrainit(ctr, newEnvMap(ctr))
		if dc == nil || !dc.trigKnown || !reflect.DeepEqual(dc.trig, cfg.Triggers) {
			t.Errorf("%q %v: check has %+v, drainit %v", c.args, c.env, dc, cfg.Triggers)
		}
	}
}

// TestExamplesPassClean: the example manifests are what the README points people at; `drainit
// check` must find nothing in them. The nginx one passes because of DRAINIT_STOP_SIGNAL=QUIT:
// without it, the image-quit warning fires.
func TestExamplesPassClean(t *testing.T) {
	files, _ := filepath.Glob("../examples/kubernetes/*.yaml")
	seen := false
	for _, f := range files {
		ws, fs := checkFile(t, f)
		if len(fs) != 0 {
			t.Errorf("%s: %+v", f, fs)
		}
		if filepath.Base(f) != "deployment-nginx.yaml" {
			continue
		}
		seen = true
		if len(ws) != 1 || len(ws[0].Containers) != 1 {
			t.Fatalf("%s: want one pod template with one container, got %+v", f, ws)
		}
		c := &ws[0].Containers[0]
		var env []EnvVar
		for _, v := range c.Env {
			if v.Name != "DRAINIT_STOP_SIGNAL" {
				env = append(env, v)
			}
		}
		if len(env) != len(c.Env)-1 {
			t.Fatalf("%s: no DRAINIT_STOP_SIGNAL to take out", f)
		}
		c.Env = env
		if got := rules(Check(ws)); got != "warning:"+RuleStopSignalImage {
			t.Errorf("%s without DRAINIT_STOP_SIGNAL: got %q, want the image-quit warning", f, got)
		}
	}
	if !seen {
		t.Error("no examples/kubernetes/deployment-nginx.yaml")
	}
}

// TestPrestopTokenTrimmed: a token written with a trailing newline (a Secret made from a file)
// is the token drainit uses without it, so a preStop header without the newline matches.
func TestPrestopTokenTrimmed(t *testing.T) {
	c := "image: x\ncommand: [/drainit, --, /app]\n" +
		"env: [{name: DRAINIT_HTTP_ADDR, value: ':8099'}, {name: DRAINIT_HTTP_TOKEN, value: \"s3cret\\n\"}]\n" +
		"lifecycle: {preStop: {httpGet: {port: 8099, path: /prestop, httpHeaders: [{name: Authorization, value: Bearer s3cret}]}}}"
	ws, err := Read("p.yaml", strings.NewReader(pod("40", c)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Check(ws) {
		if f.Rule == RulePreStopToken {
			t.Errorf("unexpected %s: %s", f.Rule, f.Message)
		}
	}
}

// TestBearerIsAsTheServerReads: the prestop-token rule takes the header as drainit's control
// server does, so it flags only what the server would refuse.
func TestBearerIsAsTheServerReads(t *testing.T) {
	for header, want := range map[string]bool{
		"Bearer s3cret": true, "bearer s3cret": true, "BEARER  s3cret": true, " Bearer s3cret ": true,
		"Bearer s3cre": false, "Basic s3cret": false, "s3cret": false, "Bearer": false,
	} {
		if got := bearerIs(header, "s3cret"); got != want {
			t.Errorf("bearerIs(%q) = %v, want %v", header, got, want)
		}
	}
}

// TestPreStopHTTPMisses: an httpGet to drainit's port that cannot start the drain (another path,
// the node's loopback as host, drainit listening on loopback while the kubelet calls the pod's
// IP) was taken for a working drain; each is a prestop-server error, and hostNetwork makes
// loopback right.
func TestPreStopHTTPMisses(t *testing.T) {
	_, fs := checkFile(t, "testdata/rules/prestop-http-miss.yaml")
	// With them, the control server on every address with no token (not where it is on loopback).
	const open = `(DRAINIT_HTTP_ADDR ":8099") needs no token`
	checkFindings(t, fs, []wantFinding{
		{11, Warning, RuleControlNoToken, "path", []string{open}},
		{12, Error, RulePreStopServer, "path", []string{`path "/readyz"`, "only /prestop starts the drain"}},
		{16, Warning, RuleControlNoToken, "node-loopback", []string{open}},
		{17, Error, RulePreStopServer, "node-loopback", []string{`host "localhost"`, "node's own loopback"}},
		{22, Error, RulePreStopServer, "listens-on-loopback", []string{`loopback only (DRAINIT_HTTP_ADDR "127.0.0.1:8099")`, `":8099"`}},
		{26, Warning, RuleControlNoToken, "fine", []string{open}},
	})
}

// TestArgoRollout: an Argo Rollout's pod template is read like a Deployment's (it was skipped:
// "no pod templates found"); a Rollout of another group is not.
func TestArgoRollout(t *testing.T) {
	_, fs := checkFile(t, "testdata/rules/rollout.yaml")
	checkFindings(t, fs, []wantFinding{
		{13, Error, RulePreStopGrace, "app", []string{"preStop 20s", "terminationGracePeriodSeconds 10s"}},
	})
}

// TestProbeUnreachable: a readiness, liveness or startup probe of drainit's control port with
// the node's loopback as host, or with no host while drainit listens on loopback only, never
// reaches the pod (the kubelet probes from the node, to the pod's IP); each is a
// probe-unreachable error, on the probe's line. hostNetwork makes loopback right, and a probe of
// the app's port is the app's.
func TestProbeUnreachable(t *testing.T) {
	_, fs := checkFile(t, "testdata/rules/probe-unreachable.yaml")
	// With them, the control server on every address with no token (not where it is on loopback).
	const open = `(DRAINIT_HTTP_ADDR ":8099") needs no token`
	checkFindings(t, fs, []wantFinding{
		{10, Warning, RuleControlNoToken, "readiness-loopback", []string{open}},
		{13, Error, RuleProbeUnreachable, "readiness-loopback", []string{`readinessProbe httpGet has host "127.0.0.1"`, "node's own loopback", "never becomes ready"}},
		{17, Warning, RuleControlNoToken, "liveness-localhost", []string{open}},
		{18, Error, RuleProbeUnreachable, "liveness-localhost", []string{`livenessProbe httpGet has host "localhost"`, "restarts the container"}},
		{24, Error, RuleProbeUnreachable, "listens-on-loopback", []string{`loopback only (DRAINIT_HTTP_ADDR "127.0.0.1:8099")`, "sends the startupProbe httpGet to the pod's IP", `":8099"`}},
		{30, Warning, RuleControlNoToken, "app-port", []string{open}},
		{37, Warning, RuleControlNoToken, "fine", []string{open}},
	})
}

// TestGraceFixesAgree: when the stop does not fit, the fix the check gives is one fix, and it
// holds. Setting the pod's grace period and drainit's to the values the message gives leaves
// no error, and no finding says otherwise on the way (drainit-grace-mismatch once pointed at the
// window that did not fit, a value drainit refuses to start with).
func TestGraceFixesAgree(t *testing.T) {
	const spring = "SPRING_LIFECYCLE_TIMEOUT_PER_SHUTDOWN_PHASE"
	fix := regexp.MustCompile(`needs (?:at least )?(\d+)s?[:,].*?(?:DRAINIT_GRACE_PERIOD|--grace-period) to (?:be )?([^,\s]+)`)
	for _, c := range []struct{ name, preStop, drainitGrace string }{
		{"preStop sleep: drainit's clock starts after it", "{exec: {command: [/drainit, sleep, 55s]}}", "60s"},
		{"preStop sleep action", "{sleep: {seconds: 50}}", "30s"},
		{"preStop longer than the grace period", "{exec: {command: [/drainit, sleep, 65s]}}", "60s"},
		{"drainit preStop", "{exec: {command: [/drainit, prestop]}}", "60s"},
		{"no preStop", "", "60s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			manifest := func(grace, drainitGrace string) string {
				ctr := "image: x\ncommand: [/drainit, --http-addr=127.0.0.1:8099, --, /app]\n" +
					"env: [{name: DRAINIT_GRACE_PERIOD, value: " + drainitGrace + "}, {name: " + spring + ", value: 60s}]"
				if c.preStop != "" {
					ctr += "\nlifecycle: {preStop: " + c.preStop + "}"
				}
				return pod(grace, ctr)
			}
			check := func(m string) []Finding {
				ws, err := Read("p.yaml", strings.NewReader(m))
				if err != nil {
					t.Fatalf("Read: %v\n%s", err, m)
				}
				return Check(ws)
			}
			before := check(manifest("60", c.drainitGrace))
			var errs []Finding
			for _, f := range before {
				if f.Severity == Error {
					errs = append(errs, f)
				}
			}
			if len(errs) != 1 {
				t.Fatalf("want one error (the stop does not fit), got %s: %+v", rules(before), before)
			}
			m := fix.FindStringSubmatch(errs[0].Message)
			if m == nil {
				t.Fatalf("%s gives no grace periods to set: %s", errs[0].Rule, errs[0].Message)
			}
			after := check(manifest(m[1], m[2]))
			for _, f := range after {
				if f.Severity == Error || f.Rule == RuleDrainitGrace {
					t.Errorf("with grace %s and DRAINIT_GRACE_PERIOD %s, as %s said: %s: %s", m[1], m[2], errs[0].Rule, f.Rule, f.Message)
				}
			}
		})
	}
}

// TestExcessiveAliasing: a few kilobytes of aliases that repeat a container thousands of times
// are refused as kubectl refuses them, before the reader builds them (it went to gigabytes and
// out of memory); a manifest that shares a container or its env through anchors still reads.
func TestExcessiveAliasing(t *testing.T) {
	var env, uses strings.Builder
	for i := range 4000 {
		fmt.Fprintf(&env, "{name: V%d, value: v}, ", i)
		uses.WriteString("*c, ")
	}
	bomb := "c: &c {name: x, image: nginx, env: [" + env.String() + "]}\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\n" +
		"spec: {containers: [" + uses.String() + "]}\n"
	list := "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n  spec:\n    containers:\n" +
		"    - &c {name: x, image: nginx, env: [" + env.String() + "]}\n" + strings.Repeat("    - *c\n", 4000)
	for name, in := range map[string]string{"document": bomb, "list": list} {
		_, err := Read("bomb.yaml", strings.NewReader(in))
		var re *ReadError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), "excessive aliasing") {
			t.Errorf("%s: %d bytes of aliases: got %v, want a ReadError for excessive aliasing", name, len(in), err)
		}
	}
	shared := `x-app: &app {image: nginx, env: &env [{name: A, value: "1"}]}
apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  template:
    spec:
      terminationGracePeriodSeconds: 30
      containers:
      - {<<: *app, name: a}
      - {<<: *app, name: b, env: *env}
      - {<<: *app, name: c}
`
	ws, err := Read("shared.yaml", strings.NewReader(shared))
	if err != nil || len(ws) != 1 || len(ws[0].Containers) != 3 {
		t.Fatalf("anchors shared by three containers: %v, %+v", err, ws)
	}
	circular := "a: &a [*a]\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: x, image: y}]}\n"
	if _, err := Read("circular.yaml", strings.NewReader(circular)); err != nil && strings.Contains(err.Error(), "aliasing") {
		t.Errorf("an anchor holding its own alias is no bomb: %v", err)
	}
}

// TestYAML11Booleans: hostNetwork and shareProcessNamespace written as YAML 1.1 reads them
// (True, yes, on), which kubectl takes as true, were read as false.
func TestYAML11Booleans(t *testing.T) {
	for _, v := range []string{"true", "True", "TRUE", "yes", "Yes", "on", "ON", "y"} {
		in := "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  hostNetwork: " + v + "\n  shareProcessNamespace: " + v +
			"\n  containers: [{name: x, image: y}]\n"
		ws, err := Read("p.yaml", strings.NewReader(in))
		if err != nil || len(ws) != 1 || !ws[0].HostNetwork || !ws[0].SharePID {
			t.Errorf("%s: %v, %+v; want hostNetwork and shareProcessNamespace true", v, err, ws)
		}
	}
	for _, v := range []string{"false", "False", "no", "off", "'true'", `"yes"`} {
		in := "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  hostNetwork: " + v + "\n  containers: [{name: x, image: y}]\n"
		if ws, err := Read("p.yaml", strings.NewReader(in)); err != nil || len(ws) != 1 || ws[0].HostNetwork {
			t.Errorf("%s: %v, %+v; want hostNetwork false", v, err, ws)
		}
	}
}

// TestPreStopLoopbackSpellings: a preStop httpGet to drainit's port with a loopback host goes to
// the node's loopback however the host is spelt; only localhost, 127.0.0.1 and ::1 were taken
// for drainit's server, and LOCALHOST, 127.0.0.2 or [::1] passed for some other server's.
func TestPreStopLoopbackSpellings(t *testing.T) {
	for _, host := range []string{"localhost", "LOCALHOST", "127.0.0.1", "127.0.0.2", "'::1'", "'[::1]'"} {
		in := "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: x\n" +
			"    command: [/drainit, --http-addr, ':8099', --http-token, t, --, /app]\n" +
			"    lifecycle: {preStop: {httpGet: {host: " + host + ", path: /prestop, port: 8099, httpHeaders: [{name: Authorization, value: Bearer t}]}}}\n"
		ws, err := Read("p.yaml", strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		if got := rules(Check(ws)); got != "error:prestop-server" {
			t.Errorf("host %s: got %q, want the node-loopback error", host, got)
		}
	}
}
