package check

import (
	"errors"
	"fmt"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/drainit/drainit/internal/config"
	"github.com/drainit/drainit/signals"
)

// drainit's settings in one container. The check reads no option itself: it finds drainit's
// command line and DRAINIT_* variables in the manifest and hands them to drainit's own parser
// and validation (config.Validate), so that the check knows every option drainit knows, and
// reports every configuration drainit refuses at start with the message drainit prints.
//
// What the manifest does not show is config.Unseen, for which drainit's validation applies no
// rule: a variable from a Secret, a ConfigMap, a field or envFrom; a $(VAR) naming one; a shell
// expansion in a script. An unseen word where drainit reads flags may set any option, so then
// every option is unseen.

// setting is one of drainit's options as the manifest configures it.
type setting struct {
	raw   string // as written; drainit's default when src is ""
	src   string // "DRAINIT_GRACE_PERIOD", "--grace-period", or "" for drainit's default
	line  int    // 0 for the default
	known bool   // false: the manifest does not show the value, or drainit refuses it
	empty bool   // src is a variable set to "", which drainit takes as unset: raw is the default
}

// durSetting is a duration option, parsed; d is drainit's default when the value is not known.
type durSetting struct {
	setting
	d time.Duration
}

// drainitConf is drainit's configuration in one container, as far as the manifest shows it.
type drainitConf struct {
	line     int                // where the manifest shows drainit: its command, or its first DRAINIT_* variable
	settings map[string]setting // every option, by flag name
	errs     []configError      // what drainit refuses to start with
	strays   []strayVar         // DRAINIT_* variables drainit does not know: it warns, and ignores them
	// The settings the rules read. drain is the longest drain: --drain-delay, or --drain-max
	// when the drain is adaptive.
	grace, drain, margin                  durSetting
	adaptive                              bool          // --drain adaptive, as far as the manifest shows
	budget                                config.Budget // the supervisor's, from the values as read
	delay                                 durSetting    // --drain-delay: with an adaptive drain, its fallback
	httpAddr, token, triggers, stopSignal setting
	// trig is the set of signals that start drainit's stop sequence, as drainit computes it;
	// trigKnown is false when a value comes from somewhere the manifest does not show, or is bad.
	trig      []syscall.Signal
	trigKnown bool
	// nested is the app drainit would run when that is drainit again, in run mode ("" if not):
	// the inner one refuses to start (README, "drainit under drainit").
	nested string
}

// lineOf is where the manifest sets s, or where it shows drainit when s is not set there.
func (dc *drainitConf) lineOf(s setting) int {
	if s.line != 0 {
		return s.line
	}
	return dc.line
}

// strayVar is a DRAINIT_* variable that is no option's, and the line that sets it.
type strayVar struct {
	line  int
	stray config.Stray
}

// configError is a mistake drainit refuses to start with, and the line that shows it.
type configError struct {
	line int
	err  *config.Error
}

// findDrainit returns drainit's configuration when drainit runs the container's app: its
// binary is in command or args (directly or in a shell script), or DRAINIT_* variables are set
// (drainit is then presumably the image's ENTRYPOINT). nil when neither.
func findDrainit(c *Container, env envMap) *drainitConf {
	words := argv(c, env, true)
	args, line, whole, found := drainitArgs(words, env)
	if !found {
		for _, v := range c.Env {
			if strings.HasPrefix(v.Name, config.EnvPrefix) {
				found, line = true, v.Line
				break
			}
		}
		if !found {
			return nil
		}
		if c.Command == nil {
			args = words // drainit is the ENTRYPOINT: args are its arguments
		}
	}
	environ := drainitEnv(c, env)
	v := config.Validate(wordStrings(args), environ)
	if !whole {
		// The manifest shows the end of drainit's command line at most: the ENTRYPOINT may
		// hold the app already (the README's ends in "-- /app"), a script may do anything. A
		// missing command is no finding then; words drainit cannot read as its flags are taken
		// for the app's, and only the variables are read.
		var kept []*config.Error
		for _, e := range v.Errors {
			if e.Flag == "" && !errors.Is(e.Err, config.ErrNoCommand) {
				args, v = nil, config.Validate([]string{"--", config.Unseen}, environ)
				kept = v.Errors
				break
			}
			if e.Flag != "" {
				kept = append(kept, e)
			}
		}
		v.Errors = kept
	}

	dc := &drainitConf{line: line, settings: map[string]setting{}}
	for _, o := range config.Options() {
		s := v.Settings[o.Flag]
		st := setting{raw: s.Value, src: s.Source, known: s.Seen && !s.Bad}
		switch {
		case s.Arg >= 0:
			st.line = args[s.Arg].line
		case s.Source == o.Env:
			if ev, ok := env.lookup(o.Env); ok {
				st.line, st.empty = ev.Line, ev.Known && ev.Value == ""
			} else {
				st.src = "" // envFrom may set it, or not
			}
		}
		dc.settings[o.Flag] = st
	}
	for _, e := range v.Errors {
		dc.errs = append(dc.errs, configError{dc.lineOf(dc.settings[e.Flag]), e})
	}
	if app := v.Config.Command; len(app) > 0 && isDrainit(app[0]) && !(len(app) > 1 && isSubcommand(app[1])) {
		dc.nested = app[0]
	}
	for _, s := range config.Strays(environ) {
		ev, _ := env.lookup(s.Name)
		dc.strays = append(dc.strays, strayVar{ev.Line, s})
	}

	cfg := v.Config
	dc.grace = dc.duration("grace-period", cfg.GracePeriod)
	dc.margin = dc.duration("kill-margin", cfg.KillMargin)
	dc.delay = dc.duration("drain-delay", cfg.DrainDelay)
	// The stop's budget is the supervisor's (Config.Budget), from the values as read here.
	read := *cfg
	read.GracePeriod, read.KillMargin, read.DrainDelay = dc.grace.d, dc.margin.d, dc.delay.d
	read.DrainMax = dc.duration("drain-max", cfg.DrainMax).d
	dc.budget = read.Budget()
	dc.drain = dc.duration(dc.budget.DrainFlag, dc.budget.Drain)
	dc.drain.known = dc.drain.known && dc.settings["drain"].known
	dc.adaptive = cfg.Adaptive && dc.settings["drain"].known
	dc.httpAddr, dc.token = dc.settings["http-addr"], dc.settings["http-token"]
	dc.triggers, dc.stopSignal = dc.settings["triggers"], dc.settings["stop-signal"]
	if dc.triggers.known && dc.stopSignal.known {
		dc.trig, dc.trigKnown = cfg.Triggers, true
	}
	return dc
}

// drainitArgs finds drainit's binary in the command line and returns the words after it: its
// arguments. whole says they are all of them: drainit is a word of command or args, or the
// command of a line of a shell script. A drainit subcommand (sleep, prestop, …) does not count:
// drainit then runs no app.
func drainitArgs(words []word, env envMap) (args []word, line int, whole, found bool) {
	for i, w := range words {
		if isDrainit(w.s) && !(i > 0 && isFlagValue(words[0].s, words[i-1].s)) {
			if i+1 < len(words) && isSubcommand(words[i+1].s) {
				return nil, 0, false, false
			}
			return words[i+1:], w.line, true, true
		}
		// A shell script: sh -c "exec /drainit --grace-period 60s -- /app".
		if !strings.ContainsAny(w.s, " \t\n") {
			continue
		}
		for _, cmd := range shellCommands(w.s) {
			ws := plainWords(cmd.words)
			for len(ws) > 0 && (ws[0] == "exec" || ws[0] == "command") {
				ws = ws[1:]
			}
			for j, s := range ws {
				if !isDrainit(s) || (j+1 < len(ws) && isSubcommand(ws[j+1])) {
					continue
				}
				if j > 0 && !isLauncher(ws[0]) {
					// Not run, but handled: "cp /drainit /shared/", "[ -x /drainit ]". The
					// script's drainit, if any, is in a later command.
					break
				}
				for _, rest := range ws[j+1:] {
					args = append(args, word{env.expandShellUnseen(rest), w.line})
				}
				return args, w.line, j == 0, true
			}
		}
	}
	return nil, 0, false, false
}

// isDrainit says whether a word names drainit's binary. A flag is never the binary, even
// when its value is a path to it ("--config=/etc/drainit").
func isDrainit(s string) bool {
	return !strings.HasPrefix(s, "-") && path.Base(s) == "drainit"
}

// isFlagValue says whether a word is the value of the flag before it, and so not a program:
// "/app --service-name drainit". In front of a launcher (tini -s drainit) a flag is taken as
// the launcher's own switch, as before: those take no value before the program.
func isFlagValue(first, prev string) bool {
	return !isLauncher(first) && strings.HasPrefix(prev, "-") && prev != "--" && !strings.Contains(prev, "=")
}

// isLauncher says whether a program runs the command that follows its own arguments: drainit
// after one of them runs, drainit after any other program is only that program's argument.
func isLauncher(prog string) bool {
	switch path.Base(prog) {
	case "tini", "tini-static", "dumb-init", "catatonit", "docker-init", "env", "nice", "ionice",
		"nohup", "setsid", "chrt", "taskset", "setpriv", "gosu", "su-exec", "chpst", "runuser",
		"s6-setuidgid", "exec", "command":
		return true
	}
	return false
}

// isSubcommand says whether a first argument makes drainit do something other than run an app.
func isSubcommand(arg string) bool { return slices.Contains(config.Subcommands(), arg) }

// drainitEnv is the DRAINIT_* environment drainit gets, as far as the manifest shows it: a
// value from valueFrom, or one naming such a variable with $(VAR), is config.Unseen, and with
// envFrom so is every variable the manifest does not list.
func drainitEnv(c *Container, env envMap) map[string]string {
	out := map[string]string{}
	// The kubelet expands $(VAR) in a value from the variables listed before it (and envFrom's).
	before := envMap{vars: map[string]EnvVar{}, envFrom: env.envFrom}
	for _, v := range c.Env {
		if strings.HasPrefix(v.Name, config.EnvPrefix) {
			val := config.Unseen
			if v.Known {
				val = before.expandK8s(v.Value, true)
			}
			out[v.Name] = val
		}
		before.vars[v.Name] = v
	}
	if env.envFrom {
		for _, o := range config.Options() {
			if _, ok := out[o.Env]; !ok {
				out[o.Env] = config.Unseen
			}
		}
	}
	return out
}

func wordStrings(ws []word) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.s
	}
	return out
}

// duration is a duration option with the value drainit runs with, or drainit's default when
// the manifest does not show a good value.
func (dc *drainitConf) duration(flag string, d time.Duration) durSetting {
	s := dc.settings[flag]
	if !s.known {
		d = defaultDuration(flag)
	}
	return durSetting{s, d}
}

// defaultDuration is drainit's default for a duration option.
func defaultDuration(flag string) time.Duration {
	for _, o := range config.Options() {
		if o.Flag == flag {
			d, err := config.ParseDuration(o.Default)
			if err != nil {
				panic(fmt.Sprintf("check: the default of --%s, %q, is no duration", flag, o.Default))
			}
			return d
		}
	}
	panic("check: drainit has no option --" + flag)
}

// isTrigger says whether sig starts drainit's stop sequence.
func (dc *drainitConf) isTrigger(sig syscall.Signal) bool {
	return slices.Contains(dc.trig, sig)
}

// describeTriggers names the trigger set and where it comes from, for messages:
// `SIGTERM, SIGINT (--triggers default "TERM,INT")`.
func (dc *drainitConf) describeTriggers() string {
	names := make([]string, len(dc.trig))
	for i, s := range dc.trig {
		names[i] = signals.Name(s)
	}
	list := strings.Join(names, ", ")
	if list == "" {
		list = "none"
	}
	src := fmt.Sprintf("--triggers default %q", dc.triggers.raw)
	if dc.triggers.src != "" {
		src = fmt.Sprintf("%s %q", dc.triggers.src, dc.triggers.raw)
	}
	if dc.stopSignal.src != "" {
		src += fmt.Sprintf(", %s %q", dc.stopSignal.src, dc.stopSignal.raw)
	}
	return list + " (" + src + ")"
}

// port is the TCP port drainit's control server listens on; 0 when off or unknown.
func (dc *drainitConf) port() int {
	if !dc.httpAddr.known || dc.httpAddr.raw == "" {
		return 0
	}
	_, p, err := splitPort(dc.httpAddr.raw)
	if err != nil {
		return 0
	}
	return p
}

// splitPort splits "host:port" (host may be empty) and reads the port.
func splitPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("address %q: %w", addr, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 0 || n > 65535 {
		return "", 0, fmt.Errorf("address %q: bad port %q", addr, p)
	}
	return host, n, nil
}

// exampleControlPort is the port drainit's documentation and examples give the control server;
// with no --http-addr in sight, an httpGet there (or to /prestop) is meant for drainit.
const exampleControlPort = 8099

// targets says whether an httpGet hook is aimed at drainit's control server.
func (dc *drainitConf) targets(g *HTTPGet, ports []Port) bool {
	if g.Host != "" && !isLoopbackHost(g.Host) {
		return false // some other server
	}
	port := resolvePort(g, ports)
	if p := dc.port(); p != 0 {
		return port == p
	}
	return pathIs(g.Path, "/prestop") || port == exampleControlPort
}

func resolvePort(g *HTTPGet, ports []Port) int {
	if g.PortName == "" {
		return g.Port
	}
	for _, p := range ports {
		if p.Name == g.PortName {
			return p.Number
		}
	}
	return 0
}
