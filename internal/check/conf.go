package check

import (
	"errors"
	"fmt"
	"io"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/internal/config"
	"github.com/drainit/drainit/signals"
)

// envMap is a container's environment, by name; the last entry of a name wins, as in the
// kubelet.
type envMap struct {
	vars    map[string]EnvVar
	envFrom bool
}

func newEnvMap(c *Container) envMap {
	m := envMap{vars: map[string]EnvVar{}, envFrom: c.EnvFrom}
	for _, v := range c.Env {
		m.vars[v.Name] = v
	}
	return m
}

// lookup returns the variable; ok is false when it is not in env (it may still come from
// envFrom, which the caller checks with m.envFrom).
func (m envMap) lookup(name string) (EnvVar, bool) {
	v, ok := m.vars[name]
	return v, ok
}

// expandShell replaces $NAME and ${NAME} with the values env gives them, as the shell of an exec
// hook would (it inherits the container's environment). Unknown names, and anything fancier
// (${NAME:-default}), stay as written.
func (m envMap) expandShell(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = m.expandShellWord(w)
	}
	return out
}

func (m envMap) expandShellWord(w string) string {
	if !strings.Contains(w, "$") {
		return w
	}
	var b strings.Builder
	for i := 0; i < len(w); i++ {
		if w[i] != '$' {
			b.WriteByte(w[i])
			continue
		}
		name, end := "", i+1
		if i+1 < len(w) && w[i+1] == '{' {
			if j := strings.IndexByte(w[i+2:], '}'); j >= 0 {
				name, end = w[i+2:i+2+j], i+3+j
			}
		} else {
			j := i + 1
			for j < len(w) && isNameByte(w[j], j == i+1) {
				j++
			}
			name, end = w[i+1:j], j
		}
		if v, ok := m.vars[name]; ok && v.Known && isName(name) {
			b.WriteString(v.Value)
			i = end - 1
			continue
		}
		b.WriteByte('$')
	}
	return b.String()
}

func isNameByte(c byte, first bool) bool {
	return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (!first && c >= '0' && c <= '9')
}

func isName(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i], i == 0) {
			return false
		}
	}
	return s != ""
}

// expandK8s replaces $(NAME) in a container's command and args as the kubelet does: defined
// names are replaced, $$ is a literal $, anything else stays as written.
func (m envMap) expandK8s(s string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '(':
			if end := strings.IndexByte(s[i+2:], ')'); end >= 0 {
				name := s[i+2 : i+2+end]
				if v, ok := m.vars[name]; ok && v.Known {
					b.WriteString(v.Value)
					i += 2 + end
					continue
				}
			}
		}
		b.WriteByte('$')
	}
	return b.String()
}

// word is one element of a container's command line, after $(VAR) expansion, with its line.
type word struct {
	s    string
	line int
}

// argv returns the container's command and args as the kubelet passes them (when command is
// unset, only the args are known: the image's ENTRYPOINT comes first).
func argv(c *Container, env envMap) []word {
	var out []word
	for i, s := range c.Command {
		out = append(out, word{env.expandK8s(s), c.CommandLines[i]})
	}
	for i, s := range c.Args {
		out = append(out, word{env.expandK8s(s), c.ArgsLines[i]})
	}
	return out
}

// setting is one of drainit's options as the manifest configures it.
type setting struct {
	raw   string // as written; "" for the default
	src   string // "DRAINIT_GRACE_PERIOD", "--grace-period", or "" for drainit's default
	line  int
	known bool // false: the value comes from a Secret, ConfigMap or envFrom, unseen here
}

// durSetting is a duration option, parsed.
type durSetting struct {
	setting
	d time.Duration
}

// drainit's defaults, as internal/config declares them (a test keeps the two in step).
const (
	defaultDrainitGrace = 30 * time.Second
	defaultDrainDelay   = 5 * time.Second
	defaultKillMargin   = 2 * time.Second
	defaultTriggers     = "TERM,INT"
)

// drainitConf is drainit's configuration in one container, as far as the manifest shows it.
type drainitConf struct {
	line                 int // where the manifest shows drainit: its command, or its first DRAINIT_* variable
	grace, drain, margin durSetting
	httpAddr, token      setting
	triggers, stopSignal setting
	// trig is the set of signals that start drainit's stop sequence, as drainit computes it;
	// trigKnown is false when a value comes from somewhere the manifest does not show, or is bad.
	trig      []unix.Signal
	trigKnown bool
	bad       []badSetting // values drainit would refuse, so it would not start
}

type badSetting struct {
	setting
	err error
}

// drainitSubcommands are the first arguments that make drainit do something other than run an
// app.
var drainitSubcommands = map[string]bool{"sleep": true, "prestop": true, "check": true, "version": true, "--version": true}

// findDrainit returns drainit's configuration when drainit runs the container's app: its
// binary is in command or args (directly or in a shell script), or DRAINIT_* variables are set
// (drainit is then presumably the image's ENTRYPOINT). nil when neither.
func findDrainit(c *Container, env envMap) *drainitConf {
	words := argv(c, env)
	flags, line, found := drainitFlags(words)
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
			flags = words // drainit is the ENTRYPOINT: args are its arguments
		}
	}
	dc := &drainitConf{line: line}
	dc.grace = dc.duration(flags, env, "grace-period", "GRACE_PERIOD", defaultDrainitGrace)
	dc.drain = dc.duration(flags, env, "drain-delay", "DRAIN_DELAY", defaultDrainDelay)
	dc.margin = dc.duration(flags, env, "kill-margin", "KILL_MARGIN", defaultKillMargin)
	dc.httpAddr = dc.option(flags, env, "http-addr", "HTTP_ADDR")
	dc.token = dc.option(flags, env, "http-token", "HTTP_TOKEN")
	dc.triggers = dc.option(flags, env, "triggers", "TRIGGERS")
	dc.stopSignal = dc.option(flags, env, "stop-signal", "STOP_SIGNAL")
	dc.triggerSet()
	return dc
}

// triggerSet works out drainit's triggers (--triggers, plus --stop-signal when it is set and
// forwardable) by handing the two settings to drainit's own configuration parser, so that the
// check and drainit cannot disagree on which signals start a drain or on which names are
// signals. A value drainit would refuse goes to dc.bad.
func (dc *drainitConf) triggerSet() {
	if !dc.triggers.known || !dc.stopSignal.known {
		return
	}
	byOption := map[string]setting{}
	var args []string
	for _, o := range []struct {
		flag string
		s    setting
	}{{"triggers", dc.triggers}, {"stop-signal", dc.stopSignal}} {
		if o.s.src != "" {
			// The flag already won over the variable in dc.option; one spelling is enough here.
			args = append(args, "--"+o.flag+"="+o.s.raw)
			byOption["--"+o.flag] = o.s
		}
	}
	cfg, err := config.Parse(append(args, "--", "app"), map[string]string{}, io.Discard)
	if err != nil {
		// Only these two options differ from drainit's defaults, so the error names one of them.
		var ce *config.Error
		if errors.As(err, &ce) {
			if s, ok := byOption[ce.Option]; ok {
				dc.bad = append(dc.bad, badSetting{s, ce.Err})
			}
		}
		return
	}
	dc.trig, dc.trigKnown = cfg.Triggers, true
}

// isTrigger says whether sig starts drainit's stop sequence.
func (dc *drainitConf) isTrigger(sig unix.Signal) bool {
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
	src := fmt.Sprintf("--triggers default %q", defaultTriggers)
	if dc.triggers.src != "" {
		src = fmt.Sprintf("%s %q", dc.triggers.src, dc.triggers.raw)
	}
	if dc.stopSignal.src != "" {
		src += fmt.Sprintf(", %s %q", dc.stopSignal.src, dc.stopSignal.raw)
	}
	return list + " (" + src + ")"
}

// drainitFlags finds drainit's binary in the command line and returns the words after it that
// are its options (up to "--" or the app's command). A drainit subcommand (sleep, prestop, …)
// does not count: drainit then runs no app.
func drainitFlags(words []word) (flags []word, line int, found bool) {
	for i, w := range words {
		if path.Base(w.s) == "drainit" {
			if i+1 < len(words) && drainitSubcommands[words[i+1].s] {
				return nil, 0, false
			}
			return words[i+1:], w.line, true
		}
		// A shell script: sh -c "exec /drainit --grace-period 60s -- /app".
		if strings.ContainsAny(w.s, " \t\n") {
			f := strings.Fields(w.s)
			for j, s := range f {
				s = strings.Trim(s, `"'`)
				if path.Base(s) != "drainit" || (j+1 < len(f) && drainitSubcommands[f[j+1]]) {
					continue
				}
				for _, rest := range f[j+1:] {
					flags = append(flags, word{strings.Trim(rest, `"'`), w.line})
				}
				return flags, w.line, true
			}
		}
	}
	return nil, 0, false
}

// flagValue finds --name / -name, with =value or the next word as its value, among Go-style
// flags that end at "--" or the first non-flag word.
func flagValue(args []string, name string) (string, bool) {
	ws := make([]word, len(args))
	for i, a := range args {
		ws[i] = word{s: a}
	}
	w, ok := flagWord(ws, name)
	return w.s, ok
}

func flagWord(args []word, name string) (word, bool) {
	var val word
	found := false
	for i := 0; i < len(args); i++ {
		a := args[i].s
		if a == "--" || !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		n, v, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !hasVal {
			// Every option of drainit's run mode takes a value, so the next word is it.
			if i+1 >= len(args) {
				break
			}
			i++
			v = args[i].s
		}
		if n == name {
			// The last one wins, as with the flag package.
			val, found = word{v, args[i].line}, true
		}
	}
	return val, found
}

// option reads one option: the flag wins over the variable.
func (dc *drainitConf) option(flags []word, env envMap, flag, envName string) setting {
	if w, ok := flagWord(flags, flag); ok {
		return setting{raw: w.s, src: "--" + flag, line: w.line, known: true}
	}
	if v, ok := env.lookup(config.EnvPrefix + envName); ok {
		return setting{raw: v.Value, src: config.EnvPrefix + envName, line: v.Line, known: v.Known}
	}
	return setting{known: !env.envFrom}
}

// duration reads a duration option, falling back to drainit's default; a value drainit would
// reject goes to dc.bad.
func (dc *drainitConf) duration(flags []word, env envMap, flag, envName string, def time.Duration) durSetting {
	s := durSetting{setting: dc.option(flags, env, flag, envName), d: def}
	if s.src == "" || !s.known {
		return s
	}
	d, err := config.ParseDuration(s.raw)
	if err != nil {
		dc.bad = append(dc.bad, badSetting{s.setting, err})
		s.known = false
		return s
	}
	s.d = d
	return s
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
	if g.Host != "" && g.Host != "localhost" && g.Host != "127.0.0.1" && g.Host != "::1" {
		return false // some other server
	}
	port := resolvePort(g, ports)
	if p := dc.port(); p != 0 {
		return port == p
	}
	p, _, _ := strings.Cut(g.Path, "?")
	return p == "/prestop" || port == exampleControlPort
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

// appTime is how long the app may take to shut down, and where that comes from.
type appTime struct {
	d    time.Duration
	src  string
	line int
}

// springProps are where a Spring Boot app's properties may be set, in Spring's order of
// precedence: command-line arguments, then Java system properties, then the environment.
var javaOptsVars = []string{"JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "JAVA_OPTS"}

// springProp finds a Spring Boot property in the container: --prop=v or -Dprop=v in the command
// line or in a JVM options variable, or its environment-variable form (relaxed binding: dots to
// underscores, dashes dropped or, the legacy form, to underscores).
func springProp(words []word, env envMap, prop string) (val, src string, line int, ok bool) {
	for _, pre := range []string{"--", "-D"} {
		for _, w := range words {
			if v, found := strings.CutPrefix(w.s, pre+prop+"="); found {
				return v, pre + prop, w.line, true
			}
		}
	}
	for _, name := range javaOptsVars {
		v, found := env.lookup(name)
		if !found || !v.Known {
			continue
		}
		for _, f := range strings.Fields(v.Value) {
			if val, found := strings.CutPrefix(f, "-D"+prop+"="); found {
				return val, name + " -D" + prop, v.Line, true
			}
		}
	}
	upper := strings.ToUpper(strings.ReplaceAll(prop, ".", "_"))
	for _, name := range []string{strings.ReplaceAll(upper, "-", ""), strings.ReplaceAll(upper, "-", "_")} {
		if v, found := env.lookup(name); found && v.Known {
			return v.Value, name, v.Line, true
		}
	}
	return "", "", 0, false
}

// springDefaultTimeout is Spring Boot's spring.lifecycle.timeout-per-shutdown-phase default.
const springDefaultTimeout = 30 * time.Second

// springShutdown returns the Spring Boot shutdown timeout the container sets, if any. A value
// that cannot be read, or a bare number (Spring reads it as milliseconds), is a warning.
func springShutdown(c *Container, words []word, env envMap) (*appTime, *Finding) {
	const prop = "spring.lifecycle.timeout-per-shutdown-phase"
	if val, src, line, ok := springProp(words, env, prop); ok {
		d, bare, err := parseSpringDuration(val)
		if err != nil {
			return nil, &Finding{Line: line, Severity: Warning, Rule: RuleSpringDuration, Message: fmt.Sprintf(
				"%s %q: %v; the shutdown time is not checked", src, val, err)}
		}
		at := &appTime{d: d, src: "Spring Boot " + src, line: line}
		if bare {
			return at, &Finding{Line: line, Severity: Warning, Rule: RuleSpringDuration, Message: fmt.Sprintf(
				"%s %q has no unit: Spring Boot reads a bare number as milliseconds, so the app gets %s to shut down; write %ss if seconds were meant",
				src, val, fmtDur(d), val)}
		}
		return at, nil
	}
	if val, src, line, ok := springProp(words, env, "server.shutdown"); ok && strings.EqualFold(strings.TrimSpace(val), "graceful") {
		return &appTime{d: springDefaultTimeout, src: "Spring Boot " + src + "=graceful, default timeout-per-shutdown-phase", line: line}, nil
	}
	return nil, nil
}

// parseSpringDuration reads a duration as Spring Boot does: "30s", "500ms", "1m" (units ns, us,
// ms, s, m, h, d, any case), ISO-8601 ("PT30S"), or a bare number of milliseconds (bare says so).
func parseSpringDuration(s string) (d time.Duration, bare bool, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false, fmt.Errorf("empty duration")
	}
	if s[0] == 'P' || s[0] == 'p' || ((s[0] == '+' || s[0] == '-') && len(s) > 1 && (s[1] == 'P' || s[1] == 'p')) {
		return parseISODuration(s)
	}
	i := 0
	if s[0] == '+' || s[0] == '-' {
		i = 1
	}
	j := i
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	if j == i {
		return 0, false, fmt.Errorf("not a Spring Boot duration (like 30s or PT30S)")
	}
	n, err := strconv.ParseInt(s[:j], 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("not a Spring Boot duration: %w", err)
	}
	if n < 0 {
		return 0, false, fmt.Errorf("negative duration")
	}
	units := map[string]time.Duration{
		"ns": time.Nanosecond, "us": time.Microsecond, "ms": time.Millisecond, "": time.Millisecond,
		"s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour,
	}
	u, ok := units[strings.ToLower(s[j:])]
	if !ok {
		return 0, false, fmt.Errorf("unknown unit %q (Spring Boot knows ns, us, ms, s, m, h, d)", s[j:])
	}
	if n > int64(forever/u) {
		return forever, s[j:] == "", nil
	}
	return time.Duration(n) * u, s[j:] == "", nil
}

// parseISODuration reads the ISO-8601 durations java.time.Duration.parse accepts, as far as
// shutdown timeouts go: PnD, then T with nH, nM, n.nS, each optional but at least one present.
func parseISODuration(s string) (time.Duration, bool, error) {
	bad := fmt.Errorf("not an ISO-8601 duration Spring Boot reads (like PT30S)")
	t := strings.ToUpper(strings.TrimPrefix(s, "+"))
	t, ok := strings.CutPrefix(t, "P")
	if !ok || t == "" {
		return 0, false, bad
	}
	var total float64
	inTime, parts := false, false
	var last float64
	for t != "" {
		if t[0] == 'T' {
			if inTime || len(t) == 1 {
				return 0, false, bad
			}
			inTime, t = true, t[1:]
			continue
		}
		j := 0
		for j < len(t) && (t[j] >= '0' && t[j] <= '9' || t[j] == '.') {
			j++
		}
		if j == 0 || j == len(t) {
			return 0, false, bad
		}
		f, err := strconv.ParseFloat(t[:j], 64)
		if err != nil {
			return 0, false, bad
		}
		var unit float64
		switch {
		case t[j] == 'D' && !inTime:
			unit = 86400
		case t[j] == 'H' && inTime:
			unit = 3600
		case t[j] == 'M' && inTime:
			unit = 60
		case t[j] == 'S' && inTime:
			unit = 1
		}
		if unit == 0 || (last != 0 && unit >= last) {
			return 0, false, bad // unknown, or out of order: D, H, M, S
		}
		last = unit
		if unit != 1 && strings.Contains(t[:j], ".") {
			return 0, false, bad // only seconds take a fraction
		}
		total += f * unit
		parts = true
		t = t[j+1:]
	}
	if !parts {
		return 0, false, bad
	}
	if total*float64(time.Second) >= float64(forever) {
		return forever, false, nil
	}
	return time.Duration(total * float64(time.Second)), false, nil
}

// isShellless says whether an image is known to have no shell and no coreutils: distroless
// (except its :debug tags, which carry busybox), Chainguard's static, or a scratch image.
func isShellless(image string) bool {
	ref := strings.ToLower(image)
	name, tag := ref, ""
	if at := strings.IndexByte(name, '@'); at >= 0 {
		name = name[:at]
	}
	if colon := strings.LastIndexByte(name, ':'); colon > strings.LastIndexByte(name, '/') {
		name, tag = name[:colon], name[colon+1:]
	}
	if strings.Contains(tag, "debug") {
		return false
	}
	switch {
	case strings.HasPrefix(name, "gcr.io/distroless/"), strings.Contains(name, "/distroless/"):
		return true
	case name == "cgr.dev/chainguard/static":
		return true
	case strings.Contains(name, "scratch"):
		return true
	}
	return false
}

// fmtDur writes a duration the way pod specs think: whole seconds as "30s", anything else in Go
// syntax, and forever as "forever".
func fmtDur(d time.Duration) string {
	switch {
	case d == forever:
		return "forever"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
}

// ceilSeconds is d rounded up to whole seconds, what terminationGracePeriodSeconds can say.
func ceilSeconds(d time.Duration) int64 {
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return s
}
