package check

// App servers' own shutdown timeouts, besides Spring Boot's (spring.go): gunicorn, uvicorn, .NET's
// generic host, Quarkus and nginx, each from its documented setting as a container argument or
// variable, or its documented default when the manifest shows the app and nothing sets it.
// Istio's sidecar, which stops beside the app, is in istio.go.
//
// The app's time is what it may take between its stop signal and exiting: it adds up with the
// preStop and drainit's drain and kill margin in shutdown-exceeds-grace, as Spring Boot's does.
// An app that waits for its connections with no limit is reported as shutdown-unbounded (info):
// a long request, a stream or a websocket then holds the pod until the SIGKILL.
//
// An app is identified only on clear evidence, and each reader says what it takes: its program
// in command or args (a word whose base name is the program, "python -m program", or the command
// of a shell script's line), its own variables, or for nginx also its official image name. A
// default is assumed only when nothing the manifest cannot show may set the value: no envFrom or
// valueFrom for the variable, no configuration file named on the command line.

import (
	"fmt"
	"path"
	"strings"
	"time"
)

// The app rules' ids.
const (
	RuleShutdownUnbounded = "shutdown-unbounded"     // the app waits for open connections with no limit
	RuleGunicornDuration  = "gunicorn-duration"      // a --graceful-timeout gunicorn refuses
	RuleUvicornDuration   = "uvicorn-duration"       // a --timeout-graceful-shutdown uvicorn refuses
	RuleDotnetDuration    = "dotnet-duration"        // a .NET shutdown timeout ignored or misread
	RuleQuarkusDuration   = "quarkus-duration"       // a quarkus.shutdown.* duration Quarkus cannot read
	RuleQuarkusBuildTime  = "quarkus-build-time"     // quarkus.shutdown.delay-enabled set at run time
	RuleNginxDuration     = "nginx-duration"         // a worker_shutdown_timeout nginx refuses
	RuleIstioDuration     = "istio-duration"         // a proxy.istio.io/config Istio cannot read
	RuleIstioDrainApp     = "istio-drain-before-app" // the sidecar stops before the app is done with the network
	RuleIstioDrainGrace   = "istio-drain-exceeds-grace"
)

// appStop is what the manifest shows of an app server's shutdown.
type appStop struct {
	name      string   // "uvicorn", for messages
	at        *appTime // its longest shutdown; nil when unbounded or not shown
	unbounded bool     // it waits for its open connections with no limit
	none      string   // why it is unbounded, for the finding: "uvicorn has no --timeout-graceful-shutdown"
	line      int      // where the app shows, for the unbounded finding
	fix       string   // the setting that bounds it, for the unbounded finding: "--timeout-graceful-shutdown N"
	doc       string   // the setting's documentation
	warnings  []Finding
}

func (a *appStop) warn(line int, rule, format string, args ...any) {
	a.warnings = append(a.warnings, Finding{Line: line, Severity: Warning, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

// findApp identifies the app server the container runs and reads its shutdown timeout into
// k.app, unless Spring Boot's is known already. gunicorn comes before uvicorn: gunicorn with
// uvicorn's worker class is stopped by gunicorn.
func (k *containerCheck) findApp(words []word, env envMap) *appStop {
	for _, find := range []func(*Container, []word, envMap) *appStop{
		gunicornStop, uvicornStop, dotnetStop, quarkusStop, k.nginxStop,
	} {
		if a := find(k.c, words, env); a != nil {
			if k.app == nil {
				k.app = a.at
			}
			return a
		}
	}
	return nil
}

// appRules reports what the app's settings and the Istio sidecar add to the container's
// findings, once the timing rules have run.
func (k *containerCheck) appRules(w *Workload, a *appStop) {
	if a != nil {
		k.out = append(k.out, a.warnings...)
	}
	if w.Kind == "Job" || w.Kind == "CronJob" {
		return // no Service sends it requests
	}
	if a != nil && a.unbounded && k.app == nil && k.grace > 0 {
		k.unbounded(a)
	}
	k.istioContainer(w)
}

// unbounded reports an app that waits for its connections with no limit, with the most it can
// be given: what is left between its stop signal and the SIGKILL.
func (k *containerCheck) unbounded(a *appStop) {
	killer := "the kubelet's SIGKILL"
	if k.dc != nil {
		killer = "drainit's SIGKILL"
	}
	fix := "set " + a.fix + " (" + a.doc + ")"
	if b := k.appBudget(); b >= time.Second {
		fix = fmt.Sprintf("set %s to at most %ds, what is left for it before %s (%s)",
			strings.TrimSuffix(a.fix, " N"), int64(b/time.Second), killer, a.doc)
	}
	k.add(a.line, Info, RuleShutdownUnbounded, "%s, so at its stop signal %s waits for open connections with no limit: "+
		"one long request, stream or websocket holds the pod until %s cuts it off; %s", a.none, a.name, killer, fix)
}

// appBudget is the most the app gets between its stop signal and the SIGKILL: what the kubelet
// leaves after the preStop, less drainit's drain (unless the preStop was the drain) and kill
// margin (its budget's MinGrace). A preStop of unknown length counts as none.
func (k *containerCheck) appBudget() time.Duration {
	window := k.afterPreStop(k.grace) // never negative
	if dc := k.dc; dc != nil {
		window -= dc.budget.MinGrace
	}
	return window
}

// programArgs finds a program in the command line and returns the words after it, its
// arguments: a word whose base name isProg accepts, "python -m prog", or the command of a line
// of a shell script (sh -c "exec gunicorn …"), whose words are expanded from the environment
// where the manifest shows the variable (config.Unseen where not). line is where it is.
func programArgs(words []word, env envMap, isProg func(string) bool) (args []word, line int, found bool) {
	match := func(ws []string) (int, bool) {
		for j, s := range ws {
			if isProg(path.Base(s)) {
				return j + 1, true
			}
			if strings.HasPrefix(path.Base(s), "python") && j+2 < len(ws) && ws[j+1] == "-m" && isProg(ws[j+2]) {
				return j + 3, true
			}
		}
		return 0, false
	}
	strs := wordStrings(words)
	if j, ok := match(strs); ok {
		return words[j:], words[j-1].line, true
	}
	for _, w := range words {
		if !strings.ContainsAny(w.s, " \t\n") {
			continue
		}
		for _, cmd := range shellCommands(w.s) {
			ws := plainWords(cmd.words)
			for len(ws) > 0 && (ws[0] == "exec" || ws[0] == "command") {
				ws = ws[1:]
			}
			if j, ok := match(ws); ok {
				for _, rest := range ws[j:] {
					args = append(args, word{env.expandShellUnseen(rest), w.line})
				}
				return args, w.line, true
			}
		}
	}
	return nil, 0, false
}

// optionValue finds a long option in a program's arguments, as --name value or --name=value;
// the last one wins, as for argparse and click. minLen > 0 accepts argparse's abbreviations:
// any prefix of name at least that long. Arguments after "--" are not options.
func optionValue(args []word, name string, minLen int) (val string, line int, found bool) {
	for i := 0; i < len(args); i++ {
		a := args[i].s
		if a == "--" {
			break
		}
		opt, v, hasEq := strings.Cut(a, "=")
		if opt != name && (minLen == 0 || len(opt) < minLen || !strings.HasPrefix(name, opt)) {
			continue
		}
		if hasEq {
			val, line, found = v, args[i].line, true
			continue
		}
		if i+1 < len(args) {
			val, line, found = args[i+1].s, args[i+1].line, true
			i++
		}
	}
	return val, line, found
}

// splitArgs splits a variable holding a command line (GUNICORN_CMD_ARGS, read by Python's
// shlex.split) into words, all at the variable's line.
func splitArgs(s string, line int) []word {
	var out []word
	for _, cmd := range shellCommands(s) {
		for _, w := range cmd.words {
			out = append(out, word{w, line})
		}
	}
	return out
}

// unseen says whether a value holds something the manifest does not show.
func unseen(s string) bool {
	return strings.Contains(s, "\x00") || strings.Contains(s, "$(")
}

// envKnown looks a variable up: its value when the manifest shows it; shown is false when it is
// not set or set from somewhere the manifest does not show; maybe says it may be set unseen
// (valueFrom, or envFrom for a name the manifest does not list).
func envKnown(env envMap, name string) (v EnvVar, shown, maybe bool) {
	v, ok := env.lookup(name)
	switch {
	case !ok:
		return v, false, env.envFrom
	case !v.Known || unseen(env.expandK8s(v.Value, true)):
		return v, false, true
	}
	v.Value = env.expandK8s(v.Value, false)
	return v, true, false
}

// parsePythonInt reads a whole number as Python's int() does for argparse's and click's int
// options: optional sign and surrounding blanks, digits with single underscores between them.
func parsePythonInt(s string) (int64, bool) {
	t := strings.TrimSpace(s)
	neg := false
	if t != "" && (t[0] == '+' || t[0] == '-') {
		neg, t = t[0] == '-', t[1:]
	}
	if t == "" || t[0] == '_' || t[len(t)-1] == '_' || strings.Contains(t, "__") {
		return 0, false
	}
	var n int64
	for i := 0; i < len(t); i++ {
		c := t[i]
		if c == '_' {
			continue
		}
		if c < '0' || c > '9' || n > (1<<62)/10 {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}
