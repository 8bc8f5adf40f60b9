// Package config reads drainit's options from DRAINIT_* environment variables and command-line
// flags (the flag wins), checks them, and turns them into typed values.
//
// Every option is declared once, as a field of Raw with its flag name, environment name, default
// and help text; flags, the environment and --help are all derived from that one declaration so
// the spellings cannot drift apart.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/internal/drainwatch"
	"github.com/drainit/drainit/signals"
)

// EnvPrefix is the prefix of every environment variable drainit reads.
const EnvPrefix = "DRAINIT_"

// Raw holds every option as the user wrote it. The tags are the single source of truth:
// env (the name after DRAINIT_), flag, envDefault and help.
type Raw struct {
	GracePeriod    string `env:"GRACE_PERIOD" flag:"grace-period" envDefault:"30s" help:"match the pod's terminationGracePeriodSeconds (or docker stop -t); the stop sequence ends by then"`
	DrainDelay     string `env:"DRAIN_DELAY" flag:"drain-delay" envDefault:"5s" help:"fixed drain wait after the offline hooks, while the app still serves"`
	Drain          string `env:"DRAIN" flag:"drain" envDefault:"fixed" help:"fixed (wait --drain-delay) or adaptive (until no new connection for --drain-quiet, within --drain-min and --drain-max)"`
	DrainQuiet     string `env:"DRAIN_QUIET" flag:"drain-quiet" envDefault:"1s" help:"adaptive drain: end once no new connection has arrived for this long"`
	DrainMin       string `env:"DRAIN_MIN" flag:"drain-min" envDefault:"0s" help:"adaptive drain: never shorter than this"`
	DrainMax       string `env:"DRAIN_MAX" flag:"drain-max" envDefault:"15s" help:"adaptive drain: never longer than this"`
	DrainPorts     string `env:"DRAIN_PORTS" flag:"drain-ports" envDefault:"" help:"adaptive drain: watch these listeners (PORT or ADDR:PORT, comma-separated) instead of the app's own"`
	KillMargin     string `env:"KILL_MARGIN" flag:"kill-margin" envDefault:"2s" help:"SIGKILL everything this long before the grace deadline"`
	CleanupWait    string `env:"CLEANUP_WAIT" flag:"cleanup-wait" envDefault:"2s" help:"after the app exits, how long what it left behind gets between SIGTERM and SIGKILL"`
	Triggers       string `env:"TRIGGERS" flag:"triggers" envDefault:"TERM,INT" help:"signals that start the stop sequence (--stop-signal is always one too); any other signal is forwarded at once"`
	StopSignal     string `env:"STOP_SIGNAL" flag:"stop-signal" envDefault:"" help:"signal the app gets at the stop step (default: the trigger signal, rewritten); it also starts the stop sequence, so a runtime that stops the container with it (STOPSIGNAL SIGQUIT) drains first"`
	Forward        string `env:"FORWARD" flag:"forward" envDefault:"group" help:"where signals go: group (the app's process group) or child (the app alone)"`
	Rewrite        string `env:"REWRITE" flag:"rewrite" envDefault:"" help:"rewrite forwarded signals, FROM:TO,… (TO 0 or none drops it), e.g. HUP:USR1"`
	ExitMap        string `env:"EXIT_MAP" flag:"exit-map" envDefault:"" help:"remap the app's exit status, FROM:TO,…, e.g. 143:0"`
	OfflineExec    string `env:"OFFLINE_EXEC" flag:"offline-exec" envDefault:"" help:"command run after a trigger, before the drain (e.g. deregister): a JSON array or a space-separated string"`
	OfflineHTTP    string `env:"OFFLINE_HTTP" flag:"offline-http" envDefault:"" help:"HTTP call after a trigger, before the drain: URL, METHOD URL, or JSON {method,url,headers,body}"`
	OnlineExec     string `env:"ONLINE_EXEC" flag:"online-exec" envDefault:"" help:"command run once the app is ready (e.g. register)"`
	OnlineHTTP     string `env:"ONLINE_HTTP" flag:"online-http" envDefault:"" help:"HTTP call once the app is ready"`
	PostStopExec   string `env:"POST_STOP_EXEC" flag:"post-stop-exec" envDefault:"" help:"command run after the app has exited"`
	PostStopHTTP   string `env:"POST_STOP_HTTP" flag:"post-stop-http" envDefault:"" help:"HTTP call after the app has exited"`
	HookTimeout    string `env:"HOOK_TIMEOUT" flag:"hook-timeout" envDefault:"10s" help:"how long each hook may take (also bounded by the grace deadline)"`
	ReadyProbe     string `env:"READY_PROBE" flag:"ready-probe" envDefault:"" help:"when the app is ready: tcp://HOST:PORT or http(s)://... (2xx); default: at once"`
	HTTPAddr       string `env:"HTTP_ADDR" flag:"http-addr" envDefault:"" help:"control server address, e.g. :8099 (/prestop, /healthz, /readyz, /status); off when empty"`
	HTTPToken      string `env:"HTTP_TOKEN" flag:"http-token" envDefault:"" help:"bearer token required by /prestop and /status"`
	LogFormat      string `env:"LOG_FORMAT" flag:"log-format" envDefault:"" help:"json or console (default: console on a terminal, else json)"`
	LogLevel       string `env:"LOG_LEVEL" flag:"log-level" envDefault:"info" help:"debug, info, warn or error"`
	TerminationLog string `env:"TERMINATION_LOG" flag:"termination-log" envDefault:"/dev/termination-log" help:"file for the stop summary, written if it exists and is writable (empty: off)"`
}

// Forward says where forwarded signals go.
type Forward int

// The --forward modes.
const (
	ForwardGroup Forward = iota // the app's whole process group
	ForwardChild                // the app's process alone
)

// Config is the checked, typed configuration of the run subcommand.
type Config struct {
	Command     []string
	GracePeriod time.Duration
	DrainDelay  time.Duration
	Adaptive    bool // --drain adaptive
	DrainQuiet  time.Duration
	DrainMin    time.Duration
	DrainMax    time.Duration
	DrainPorts  []drainwatch.Endpoint
	KillMargin  time.Duration
	CleanupWait time.Duration
	// Triggers start the stop sequence: --triggers, and the stop signal when one is set.
	//
	// The stop signal is always a trigger because whatever a platform sends to stop a container
	// must start the stop sequence, and that is not always SIGTERM: docker, podman and
	// containerd's CRI (so the kubelet) send the image's STOPSIGNAL (SIGQUIT in every image FROM
	// nginx or php-fpm), Kubernetes 1.33+ a pod's lifecycle.stopSignal. Setting --stop-signal QUIT
	// says QUIT is how this app is stopped, so an incoming QUIT is the platform stopping it: drain
	// first, then pass it on. Without --stop-signal, QUIT is no trigger and is forwarded at once,
	// as a JVM's thread dump (kill -QUIT) or a Go app's goroutine dump needs. A stop signal that
	// drainit never forwards (KILL, STOP, CHLD...: signals.Forwardable) is not added.
	Triggers       []unix.Signal
	StopSignal     unix.Signal // 0: the trigger signal, through Rewrite
	Forward        Forward
	Rewrite        signals.Rewrite
	ExitMap        signals.ExitMap
	HookTimeout    time.Duration
	Hooks          map[HookSpec]string // the hook options that are set, by kind
	ReadyProbe     string
	HTTPAddr       string
	HTTPToken      string
	LogFormat      string // "json" or "console"; "" decides by the terminal
	LogLevel       string
	TerminationLog string

	source map[string]string // flag name -> where its value came from
}

// OptionName is how the user spelled the option whose flag name is flag: "--flag" or
// "DRAINIT_ENV", for error messages about values checked outside this package.
func (c *Config) OptionName(flag string) string {
	if s := c.source[flag]; s != "" {
		return s
	}
	return "--" + flag
}

// Drain is the longest the drain can take: --drain-delay, or --drain-max when adaptive.
func (c *Config) Drain() time.Duration {
	if c.Adaptive {
		return c.DrainMax
	}
	return c.DrainDelay
}

// Warnings lists the settings that are valid but cannot all fit in the grace period, with the
// numbers, so that the log says at start-up what will be cut short.
func (c *Config) Warnings() []string {
	var out []string
	n := 0
	for spec := range c.Hooks {
		if spec.Stage == "offline" {
			n++
		}
	}
	if n > 0 {
		need := time.Duration(n)*c.HookTimeout + c.Drain() + c.KillMargin
		if need >= c.GracePeriod {
			out = append(out, fmt.Sprintf(
				"offline hooks (%d × hook timeout %s) + drain %s + kill margin %s = %s, not less than grace period %s: slow hooks will cut the drain short",
				n, c.HookTimeout, c.Drain(), c.KillMargin, need, c.GracePeriod))
		}
	}
	for spec := range c.Hooks {
		if spec.Stage == "post-stop" && c.HookTimeout > c.GracePeriod-c.Drain()-c.KillMargin {
			out = append(out, fmt.Sprintf(
				"post-stop hook timeout %s exceeds what a stop can leave it (grace %s - drain %s - kill margin %s): it may be cut at the deadline",
				c.HookTimeout, c.GracePeriod, c.Drain(), c.KillMargin))
			break
		}
	}
	return out
}

// HookSpec names one hook option: its stage and kind. Flag is the option's flag name, so that
// whoever parses the hook's value can name the option in an error.
type HookSpec struct {
	Stage string // "offline", "online" or "post-stop"
	Kind  string // "exec" or "http"
}

// Flag is the option's flag name, e.g. "offline-exec".
func (h HookSpec) Flag() string { return h.Stage + "-" + h.Kind }

// Error is a configuration mistake: which option, the value given and what is wrong with it.
type Error struct {
	Option string // "--grace-period" or "DRAINIT_GRACE_PERIOD", whichever the value came from
	Value  string
	Err    error
}

func (e *Error) Error() string {
	if e.Option == "" {
		return e.Err.Error()
	}
	return fmt.Sprintf("%s %q: %v", e.Option, e.Value, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// ErrHelp is returned by Parse when --help was asked for; the usage has been written.
var ErrHelp = flag.ErrHelp

// Parse reads the environment (lookup, e.g. os.LookupEnv's map) and then args (without the
// program name), and returns the checked configuration. Usage text for --help goes to usage.
func Parse(args []string, environ map[string]string, usage io.Writer) (*Config, error) {
	raw, from, cmd, err := parseRaw(args, environ, usage)
	if err != nil {
		return nil, err
	}
	return raw.check(cmd, from)
}

// parseRaw fills a Raw from the environment and the flags, and reports where each value came
// from ("--flag" or "DRAINIT_ENV") so errors can name what the user actually wrote.
func parseRaw(args []string, environ map[string]string, usage io.Writer) (*Raw, map[string]string, []string, error) {
	var raw Raw
	if err := env.ParseWithOptions(&raw, env.Options{Prefix: EnvPrefix, Environment: environ}); err != nil {
		return nil, nil, nil, fmt.Errorf("environment: %w", err)
	}
	// caarlos0/env takes an empty variable for an unset one and applies the default; for the
	// termination log, empty is documented as "off", so an explicit empty value must win.
	if v, ok := environ[EnvPrefix+"TERMINATION_LOG"]; ok && v == "" {
		raw.TerminationLog = ""
	}
	from := map[string]string{}
	fs := flag.NewFlagSet("drainit", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	for _, f := range fields() {
		p := reflect.ValueOf(&raw).Elem().FieldByName(f.name).Addr().Interface().(*string)
		fs.StringVar(p, f.flag, *p, f.help)
		if _, ok := environ[EnvPrefix+f.env]; ok {
			from[f.flag] = EnvPrefix + f.env
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			WriteUsage(usage)
			return nil, nil, nil, ErrHelp
		}
		return nil, nil, nil, &Error{Err: err}
	}
	fs.Visit(func(f *flag.Flag) { from[f.Name] = "--" + f.Name })
	return &raw, from, fs.Args(), nil
}

type field struct{ name, env, flag, def, help string }

func fields() []field {
	t := reflect.TypeFor[Raw]()
	out := make([]field, 0, t.NumField())
	for i := range t.NumField() {
		sf := t.Field(i)
		out = append(out, field{sf.Name, sf.Tag.Get("env"), sf.Tag.Get("flag"), sf.Tag.Get("envDefault"), sf.Tag.Get("help")})
	}
	return out
}

// WriteUsage writes --help: the command line and every option with its environment name and
// default.
func WriteUsage(w io.Writer) {
	fmt.Fprint(w, `Usage:
  drainit [OPTIONS] [--] COMMAND [ARG...]   run COMMAND as the app and own its stop sequence
  drainit sleep DURATION                    sleep (a preStop exec hook for images without sleep)
  drainit prestop [--addr ADDR] [--token T] ask the running drainit to drain; returns when drained
  drainit check [--format json] FILE...|-   check Kubernetes manifests' termination timing
  drainit version

Options (each also DRAINIT_<NAME> in the environment; the flag wins):
`)
	for _, f := range fields() {
		def := f.def
		if def == "" {
			def = "none"
		}
		fmt.Fprintf(w, "  --%s\n      %s%s (default %s)\n      %s\n", f.flag, EnvPrefix, f.env, def, f.help)
	}
	fmt.Fprint(w, "\nDurations are Go durations (500ms, 30s) or a number of seconds (30).\n")
}

// check converts and validates every option. from maps a flag name to where its value came from.
func (r *Raw) check(cmd []string, from map[string]string) (*Config, error) {
	c := &Config{Command: cmd, TerminationLog: r.TerminationLog, source: from}
	var errs []error
	bad := func(flagName, value string, err error) {
		opt := from[flagName]
		if opt == "" {
			opt = "--" + flagName
		}
		errs = append(errs, &Error{Option: opt, Value: value, Err: err})
	}
	dur := func(flagName, value string, out *time.Duration) {
		d, err := ParseDuration(value)
		if err != nil {
			bad(flagName, value, err)
		}
		*out = d
	}
	dur("grace-period", r.GracePeriod, &c.GracePeriod)
	dur("drain-delay", r.DrainDelay, &c.DrainDelay)
	dur("kill-margin", r.KillMargin, &c.KillMargin)
	dur("cleanup-wait", r.CleanupWait, &c.CleanupWait)
	dur("hook-timeout", r.HookTimeout, &c.HookTimeout)
	dur("drain-quiet", r.DrainQuiet, &c.DrainQuiet)
	dur("drain-min", r.DrainMin, &c.DrainMin)
	dur("drain-max", r.DrainMax, &c.DrainMax)
	switch r.Drain {
	case "fixed":
	case "adaptive":
		c.Adaptive = true
	default:
		bad("drain", r.Drain, errors.New("must be fixed or adaptive"))
	}
	if r.DrainPorts != "" {
		var err error
		if c.DrainPorts, err = drainwatch.ParseEndpoints(r.DrainPorts); err != nil {
			bad("drain-ports", r.DrainPorts, err)
		}
	}
	c.Hooks = map[HookSpec]string{}
	for spec, v := range map[HookSpec]string{
		{"offline", "exec"}: r.OfflineExec, {"offline", "http"}: r.OfflineHTTP,
		{"online", "exec"}: r.OnlineExec, {"online", "http"}: r.OnlineHTTP,
		{"post-stop", "exec"}: r.PostStopExec, {"post-stop", "http"}: r.PostStopHTTP,
	} {
		if strings.TrimSpace(v) != "" {
			c.Hooks[spec] = v
		}
	}
	c.ReadyProbe, c.HTTPAddr, c.HTTPToken = r.ReadyProbe, r.HTTPAddr, r.HTTPToken

	for t := range strings.SplitSeq(r.Triggers, ",") {
		if strings.TrimSpace(t) == "" {
			continue
		}
		s, err := signals.Parse(t)
		if err == nil && !signals.Forwardable(s) {
			err = fmt.Errorf("%s cannot be a trigger", signals.Name(s))
		}
		if err != nil {
			bad("triggers", r.Triggers, err)
			break
		}
		c.Triggers = append(c.Triggers, s)
	}
	if r.StopSignal != "" {
		s, err := signals.Parse(r.StopSignal)
		if err != nil {
			bad("stop-signal", r.StopSignal, err)
		}
		c.StopSignal = s
		if err == nil && signals.Forwardable(s) && !slices.Contains(c.Triggers, s) {
			c.Triggers = append(c.Triggers, s) // see Config.Triggers
		}
	}
	switch r.Forward {
	case "group":
		c.Forward = ForwardGroup
	case "child":
		c.Forward = ForwardChild
	default:
		bad("forward", r.Forward, errors.New("must be group or child"))
	}
	var err error
	if c.Rewrite, err = signals.ParseRewrite(r.Rewrite); err != nil {
		bad("rewrite", r.Rewrite, err)
	}
	if c.ExitMap, err = signals.ParseExitMap(r.ExitMap); err != nil {
		bad("exit-map", r.ExitMap, err)
	}
	switch r.LogFormat {
	case "", "json", "console":
		c.LogFormat = r.LogFormat
	default:
		bad("log-format", r.LogFormat, errors.New("must be json or console"))
	}
	switch r.LogLevel {
	case "debug", "info", "warn", "error":
		c.LogLevel = r.LogLevel
	default:
		bad("log-level", r.LogLevel, errors.New("must be debug, info, warn or error"))
	}
	if len(errs) > 0 {
		// One line: the first mistake. Fixing it and running again shows the next.
		return nil, errs[0]
	}
	if c.Adaptive && c.DrainMin > c.DrainMax {
		return nil, &Error{Option: c.OptionName("drain-min"), Value: r.DrainMin, Err: fmt.Errorf(
			"the minimum %s exceeds --drain-max %s", c.DrainMin, c.DrainMax)}
	}
	if c.GracePeriod <= c.Drain()+c.KillMargin {
		// Name the option the user actually set (the one to fix), grace period first.
		opt, val := "--grace-period", r.GracePeriod
		drainFlag, drainValue := "drain-delay", r.DrainDelay
		if c.Adaptive {
			drainFlag, drainValue = "drain-max", r.DrainMax
		}
		for _, o := range []struct{ flag, value string }{
			{"grace-period", r.GracePeriod}, {drainFlag, drainValue}, {"kill-margin", r.KillMargin},
		} {
			if from[o.flag] != "" {
				opt, val = from[o.flag], o.value
				break
			}
		}
		return nil, &Error{Option: opt, Value: val, Err: fmt.Errorf(
			"grace period %s leaves the app no time to stop: it must exceed %s %s + kill margin %s",
			c.GracePeriod, strings.ReplaceAll(drainFlag, "-", " "), c.Drain(), c.KillMargin)}
	}
	if len(c.Command) == 0 {
		return nil, &Error{Err: errors.New("no command given: drainit [OPTIONS] [--] COMMAND [ARG...]")}
	}
	return c, nil
}

// ParseDuration reads a Go duration ("500ms", "1m30s") or a bare number of seconds ("30",
// "0.5"), as pod specs write them. Negative durations are an error.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, errors.New("empty duration")
	}
	if f, err := strconv.ParseFloat(t, 64); err == nil {
		if f < 0 || math.IsNaN(f) || f > float64(math.MaxInt64/int64(time.Second)) {
			return 0, errors.New("not a duration from 0 up")
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return 0, errors.New("not a duration (use 30s, 500ms or a number of seconds)")
	}
	if d < 0 {
		return 0, errors.New("not a duration from 0 up")
	}
	return d, nil
}
