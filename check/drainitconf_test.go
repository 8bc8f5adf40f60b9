package check

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/drainit/drainit/internal/config"
)

// The case: a Deployment whose drainit drains adaptively for up to 29s, under a 30s grace
// period. drainit refuses it at start (29s + the 2s kill margin leave the app nothing); so must
// the check, in drainit's words, on the line that sets --drain-max.
func TestAdaptiveDrainOverBudget(t *testing.T) {
	const m = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      terminationGracePeriodSeconds: 30
      containers:
      - name: app
        image: app:1
        command: [/drainit, --drain, adaptive]
        args:
        - --drain-max
        - 29s
        - --
        - /app
`
	_, perr := config.Parse([]string{"--drain", "adaptive", "--drain-max", "29s", "--", "/app"}, nil, nil)
	if perr == nil {
		t.Fatal("drainit itself accepts the configuration: the case no longer shows anything")
	}
	ws, err := Read("web.yaml", strings.NewReader(m))
	if err != nil {
		t.Fatal(err)
	}
	fs := Check(ws)
	if len(fs) != 1 || fs[0].Rule != RuleDrainitConfig || fs[0].Severity != Error || fs[0].Line != 14 {
		t.Fatalf("want one drainit-config error on line 14 (--drain-max's value), got %+v", fs)
	}
	if want := "drainit will not start: " + perr.Error(); fs[0].Message != want {
		t.Errorf("message %q, want drainit's own %q", fs[0].Message, want)
	}
	// Within the budget, the same Deployment has nothing wrong: its one finding is the advice
	// of adaptive-drain-ready (it has no readiness probe), an info.
	ws, _ = Read("web.yaml", strings.NewReader(strings.Replace(m, "29s", "20s", 1)))
	if fs := Check(ws); len(fs) != 1 || fs[0].Rule != RuleAdaptiveReady || fs[0].Severity != Info {
		t.Errorf("--drain-max 20s under a 30s grace: %+v, want only adaptive-drain-ready's info", fs)
	}
}

// rawOptions reads drainit's options from config.Raw's tags directly, the single declaration, so
// that this test does not trust config.Options either.
func rawOptions(t *testing.T) (out []struct{ flag, env string }) {
	t.Helper()
	typ := reflect.TypeFor[config.Raw]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		out = append(out, struct{ flag, env string }{f.Tag.Get("flag"), config.EnvPrefix + f.Tag.Get("env")})
	}
	if len(out) < 20 {
		t.Fatalf("only %d options in config.Raw", len(out))
	}
	return out
}

// TestEveryOptionRoundTrips: every option drainit declares reaches the check, by its flag (both
// spellings) and by its variable, with its value, its source and its line; and a value the
// manifest does not show (valueFrom, a $(VAR) naming one, envFrom) is unknown, not an error. A new
// option in config.Raw is covered without touching the check.
func TestEveryOptionRoundTrips(t *testing.T) {
	for _, o := range rawOptions(t) {
		val := "v-" + o.flag
		lines := func(n int) []int {
			l := make([]int, n)
			for i := range l {
				l[i] = 10 + i
			}
			return l
		}
		for _, c := range []struct {
			name     string
			ctr      Container
			src, raw string
			line     int
			known    bool
		}{
			{"--flag value", Container{Command: []string{"/drainit", "--" + o.flag, val, "--", "/app"}}, "--" + o.flag, val, 12, true},
			{"-flag=value", Container{Command: []string{"/drainit", "-" + o.flag + "=" + val, "--", "/app"}}, "--" + o.flag, val, 11, true},
			{"flag in args", Container{Command: []string{"/drainit"}, Args: []string{"--" + o.flag + "=" + val, "/app"}}, "--" + o.flag, val, 11, true},
			{"variable", Container{Command: []string{"/drainit", "/app"}, Env: []EnvVar{{Name: o.env, Value: val, Known: true, Line: 30}}}, o.env, val, 30, true},
			{"flag wins over variable", Container{Command: []string{"/drainit", "--" + o.flag + "=" + val, "/app"}, Env: []EnvVar{{Name: o.env, Value: "other", Known: true, Line: 30}}}, "--" + o.flag, val, 11, true},
			{"variable from a Secret", Container{Command: []string{"/drainit", "/app"}, Env: []EnvVar{{Name: o.env, Known: false, Line: 30}}}, o.env, "", 30, false},
			{"$(VAR) from a Secret", Container{Command: []string{"/drainit", "--" + o.flag, "$(S)", "/app"}, Env: []EnvVar{{Name: "S", Known: false, Line: 30}}}, "--" + o.flag, "", 12, false},
			{"$(VAR) resolved", Container{Command: []string{"/drainit", "--" + o.flag, "$(S)", "/app"}, Env: []EnvVar{{Name: "S", Value: val, Known: true, Line: 30}}}, "--" + o.flag, val, 12, true},
			{"envFrom", Container{Command: []string{"/drainit", "/app"}, EnvFrom: true}, "", "", 0, false},
			{"shell script", Container{Command: []string{"sh", "-c", "exec /drainit --" + o.flag + " '" + val + "' -- /app"}}, "--" + o.flag, val, 12, true},
		} {
			ctr := c.ctr
			ctr.CommandLines, ctr.ArgsLines = lines(len(ctr.Command)), lines(len(ctr.Command) + len(ctr.Args))[len(ctr.Command):]
			dc := findDrainit(&ctr, newEnvMap(&ctr))
			if dc == nil {
				t.Errorf("%s %s: drainit not found", o.flag, c.name)
				continue
			}
			s, ok := dc.settings[o.flag]
			// A value drainit refuses is not known, but it is read: its error names it.
			refused := false
			for _, e := range dc.errs {
				if e.err.Flag == o.flag {
					refused = true
					if e.line != c.line || e.err.Option != c.src || e.err.Value != c.raw {
						t.Errorf("%s %s: error %q on line %d, want it to name %s %q on line %d", o.flag, c.name, e.err, e.line, c.src, c.raw, c.line)
					}
				}
			}
			if !ok || s.src != c.src || s.raw != c.raw && c.src != "" || s.line != c.line || s.known != (c.known && !refused) {
				t.Errorf("%s %s: check reads %+v, want src %q raw %q line %d known %v", o.flag, c.name, s, c.src, c.raw, c.line, c.known)
			}
			if !c.known && len(dc.errs) != 0 {
				t.Errorf("%s %s: an unseen value is an error: %v", o.flag, c.name, dc.errs[0].err)
			}
		}
	}
}

// TestRefusedIffError: for every option, given by flag or by variable, and a spread of values,
// the check reports a drainit-config error exactly when drainit refuses to start, with the
// message drainit prints.
func TestRefusedIffError(t *testing.T) {
	values := []string{"", "x", "0", "1s", "45s", "-1", "99999", "adaptive", "fixed", "child", "TERM", "QUIT,KILL",
		"HUP:USR1", "143:0", "json", "debug", ":8099", "8099", "127.0.0.1:0", "8080,127.0.0.1:9090",
		`["/bin/x","a"]`, `/bin/x "a"`, "http://127.0.0.1:1/x", "POST http://127.0.0.1:1/x", "tcp://:1", "tcp://x"}
	refused, started := 0, 0
	for _, o := range rawOptions(t) {
		for _, val := range values {
			for _, byEnv := range []bool{false, true} {
				args := []string{"--" + o.flag, val, "--", "/app"}
				var env map[string]string
				ctr := Container{Command: append([]string{"/drainit"}, args...)}
				if byEnv {
					args, env = []string{"/app"}, map[string]string{o.env: val}
					ctr = Container{Command: []string{"/drainit", "/app"}, Env: []EnvVar{{Name: o.env, Value: val, Known: true, Line: 3}}}
				}
				ctr.CommandLines = make([]int, len(ctr.Command))
				_, perr := config.Parse(args, env, nil)
				var msgs []string
				for _, f := range checkContainer(&Workload{Grace: DefaultGrace}, &ctr) {
					if f.Rule == RuleDrainitConfig {
						msgs = append(msgs, f.Message)
					}
				}
				if perr != nil {
					refused++
				} else {
					started++
				}
				name := fmt.Sprintf("--%s %q (env %v)", o.flag, val, byEnv)
				switch {
				case perr == nil && len(msgs) > 0:
					t.Errorf("%s: drainit starts, the check says %q", name, msgs)
				case perr != nil && (len(msgs) == 0 || msgs[0] != "drainit will not start: "+perr.Error()):
					t.Errorf("%s: drainit refuses it with %q, the check says %q", name, perr, msgs)
				}
			}
		}
	}
	t.Logf("%d configurations refused, %d started", refused, started)
	if refused < 200 || started < 200 {
		t.Errorf("%d configurations refused, %d started: the values no longer spread over both", refused, started)
	}
}

// TestUnseenValues: what the manifest does not show is never an error, even where a rule between
// options would fire with drainit's defaults; what it does show still is.
func TestUnseenValues(t *testing.T) {
	const cfgErr = "error:drainit-config"
	secret := func(name string) string {
		return "{name: " + name + ", valueFrom: {secretKeyRef: {name: s, key: k}}}"
	}
	cases := []struct {
		name, container, want string
	}{
		{"grace from a Secret, long drain", "image: x\ncommand: [/drainit, --drain-delay=40s, --, /app]\nenv: [" + secret("DRAINIT_GRACE_PERIOD") + "]", ""},
		{"grace from envFrom, long drain", "image: x\ncommand: [/drainit, --drain-delay=40s, --, /app]\nenvFrom: [{configMapRef: {name: d}}]", ""},
		{"drain mode from a Secret", "image: x\ncommand: [/drainit, --drain-max=60s, --drain-delay=1s, --, /app]\nenv: [" + secret("DRAINIT_DRAIN") + "]", ""},
		{"$(VAR) from a Secret", "image: x\ncommand: [/drainit, --grace-period, $(G), --drain-delay=40s, --, /app]\nenv: [" + secret("G") + "]", ""},
		{"$(VAR) in --flag=value", "image: x\ncommand: [/drainit, '--grace-period=$(G)', --drain-delay=40s, --, /app]\nenv: [" + secret("G") + "]", ""},
		{"$(VAR) from envFrom", "image: x\ncommand: [/drainit, --grace-period, $(G), --, /app]\nenvFrom: [{secretRef: {name: d}}]", ""},
		{"$(VAR) of flags hides them all", "image: x\ncommand: [/drainit, $(FLAGS), --drain-delay=40s, --, /app]\nenv: [" + secret("FLAGS") + "]", ""},
		{"$(VAR) as the app is no flag", "image: x\ncommand: [/drainit, --drain-delay=40s, --, $(APP)]\nenv: [" + secret("APP") + "]", cfgErr},
		{"variable naming a Secret's", "image: x\ncommand: [/drainit, --, /app]\nenv: [" + secret("G") + ", {name: DRAINIT_GRACE_PERIOD, value: $(G)}]", ""},
		{"shell variable", "image: x\ncommand: [sh, -c, 'exec /drainit --grace-period $G --drain-delay 40s -- /app']", ""},
		{"shell default", "image: x\ncommand: [sh, -c, 'exec /drainit --grace-period ${G:-60s} --drain-delay 40s -- /app']", ""},
		{"shell arguments", "image: x\ncommand: [sh, -c, 'exec /drainit \"$@\" --drain-delay 40s', --]", ""},
		{"ENTRYPOINT ending in --: args are the app's", "image: x\nargs: [--port=9090]\nenv: [{name: DRAINIT_DRAIN_DELAY, value: 5s}]", ""},
		{"ENTRYPOINT, no args: the command is the image's", "image: x\nenv: [{name: DRAINIT_DRAIN_DELAY, value: 5s}]", ""},
		{"ENTRYPOINT, a variable still refused", "image: x\nargs: [--port=9090]\nenv: [{name: DRAINIT_DRAIN_DELAY, value: 40s}]", cfgErr},
		{"drainit named in a script, not run", "image: x\ncommand: [sh, -c, 'ls -l /drainit && exec /app']", ""},

		// Shown, so checked.
		{"$(VAR) resolved", "image: x\ncommand: [/drainit, --grace-period, $(G), --, /app]\nenv: [{name: G, value: 5s}]", cfgErr},
		{"variable naming a listed value", "image: x\ncommand: [/drainit, --, /app]\nenv: [{name: G, value: 5s}, {name: DRAINIT_GRACE_PERIOD, value: $(G)}]", cfgErr},
		{"$(VAR) defined later stays as written", "image: x\ncommand: [/drainit, --, /app]\nenv: [{name: DRAINIT_GRACE_PERIOD, value: $(G)}, {name: G, value: 60s}]", cfgErr},
		{"shell variable resolved", "image: x\ncommand: [sh, -c, 'exec /drainit --grace-period $G -- /app']\nenv: [{name: G, value: 5s}]", cfgErr},
		{"unknown flag", "image: x\ncommand: [/drainit, --grace, 60s, --, /app]", cfgErr},
		{"unknown flag in a script", "image: x\ncommand: [sh, -c, 'exec /drainit --grace 60s -- /app']", cfgErr},
		{"no command", "image: x\ncommand: [/drainit, --grace-period=60s]", cfgErr},
		{"two mistakes, two errors", "image: x\ncommand: [/drainit, --drain=smart, --log-level=loud, --, /app]", cfgErr + "," + cfgErr},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := pod("", c.container)
			ws, err := Read("p.yaml", strings.NewReader(m))
			if err != nil {
				t.Fatalf("Read: %v\n%s", err, m)
			}
			var got []string
			for _, f := range Check(ws) {
				if f.Rule == RuleDrainitConfig {
					got = append(got, string(f.Severity)+":"+f.Rule)
				}
			}
			if strings.Join(got, ",") != c.want {
				t.Errorf("got %q, want %q; findings: %+v\n%s", got, c.want, Check(ws), m)
			}
		})
	}
}

// TestDrainitWord: "drainit" as the value of an app's flag is no drainit (it was read as one,
// and the app's flags reported as drainit's), and a script that copies drainit before running
// the copy is read at the command that runs it (it was read at the cp, and the flags missed).
func TestDrainitWord(t *testing.T) {
	_, fs := checkFile(t, "testdata/rules/drainit-word.yaml")
	checkFindings(t, fs, []wantFinding{
		{11, Error, RuleDrainitGrace, "copied", []string{"--grace-period=90s"}},
		{24, Error, RuleDrainitGrace, "tini", []string{"--grace-period=90s"}},
	})
}
